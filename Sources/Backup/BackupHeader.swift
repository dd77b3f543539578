// The clear header of a backup file (dpfs(5), "Backup file"): what a reader needs
// before it has the key. It holds no name, size or attribute of the sandbox; it is
// bound as associated data to the stream's first chunk, so no byte of it can change
// unnoticed.
import CSodium
import DataProtection

public struct BackupHeader: Sendable, Equatable {
    public static let magic: [UInt8] = Array("DPFSBKUP".utf8)
    /// 2: a file's content may hold holes (BackupRecord). Version 1 is read as well.
    public static let currentVersion: UInt16 = 2
    public static let oldestVersion: UInt16 = 1
    static let saltSize = Int(crypto_pwhash_SALTBYTES)
    static let streamHeaderSize = Int(crypto_secretstream_xchacha20poly1305_HEADERBYTES)
    static let keyCheckSize = 16
    /// magic 8, version 2, reserved 2, opslimit 8, memlimit 8, salt 16, stream header 24,
    /// key check 16.
    public static let size = 8 + 2 + 2 + 8 + 8 + saltSize + streamHeaderSize + keyCheckSize
    /// A reader refuses parameters above these: a crafted file must not make restore
    /// allocate many GiB or run for hours before the password is even tried.
    static let maxOpsLimit: UInt64 = 64
    static let maxMemLimit: UInt64 = 4 << 30

    public var version: UInt16
    public var opsLimit: UInt64
    public var memLimit: UInt64
    public var salt: [UInt8]
    public var streamHeader: [UInt8]
    /// BLAKE2b-128 of a constant keyed with the backup key (BackupKey.check): tells a
    /// wrong password from a damaged file. It costs a guesser the same Argon2id run
    /// as the first chunk would, so it helps no attack.
    public var keyCheck: [UInt8]

    /// Argon2id's "moderate" cost (3 passes over 256 MiB, most of a second): a backup
    /// leaves the machine and can be attacked offline, and unlike a passcode its key is
    /// not entangled with a device secret, so each guess must cost what a user tolerates
    /// once per backup.
    public static func fresh(opsLimit: UInt64 = UInt64(crypto_pwhash_OPSLIMIT_MODERATE),
                             memLimit: UInt64 = UInt64(crypto_pwhash_MEMLIMIT_MODERATE)) -> BackupHeader {
        BackupHeader(version: currentVersion, opsLimit: opsLimit, memLimit: memLimit,
                     salt: Sodium.randomBytes(saltSize), streamHeader: [UInt8](repeating: 0, count: streamHeaderSize),
                     keyCheck: [UInt8](repeating: 0, count: keyCheckSize))
    }

    public var encoded: [UInt8] {
        var bytes = Self.magic
        bytes += BigEndian.bytes(UInt64(version), count: 2) + [0, 0]
        bytes += BigEndian.bytes(opsLimit, count: 8) + BigEndian.bytes(memLimit, count: 8)
        bytes += salt + streamHeader + keyCheck
        return bytes
    }

    public init(version: UInt16, opsLimit: UInt64, memLimit: UInt64, salt: [UInt8], streamHeader: [UInt8],
                keyCheck: [UInt8]) {
        self.version = version; self.opsLimit = opsLimit; self.memLimit = memLimit
        self.salt = salt; self.streamHeader = streamHeader; self.keyCheck = keyCheck
    }

    public init(parsing bytes: [UInt8]) throws {
        guard bytes.count == Self.size, Array(bytes[0..<8]) == Self.magic else { throw BackupError.notABackup }
        let version = UInt16(BigEndian.value(bytes[8..<10]))
        guard version >= Self.oldestVersion else { throw BackupError.unsupportedVersion(version) }
        guard version <= Self.currentVersion else { throw BackupError.newerVersion(version) }
        let ops = BigEndian.value(bytes[12..<20])
        let mem = BigEndian.value(bytes[20..<28])
        guard ops >= UInt64(crypto_pwhash_OPSLIMIT_MIN), ops <= Self.maxOpsLimit,
              mem >= UInt64(crypto_pwhash_MEMLIMIT_MIN), mem <= Self.maxMemLimit else {
            throw BackupError.damaged("its key-stretching parameters are out of range")
        }
        let saltEnd = 28 + Self.saltSize
        let streamEnd = saltEnd + Self.streamHeaderSize
        self.init(version: version, opsLimit: ops, memLimit: mem, salt: Array(bytes[28..<saltEnd]),
                  streamHeader: Array(bytes[saltEnd..<streamEnd]), keyCheck: Array(bytes[streamEnd...]))
    }
}

enum BigEndian {
    static func bytes(_ value: UInt64, count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(count - 1 - $0))) }
    }

    static func value<C: Collection>(_ bytes: C) -> UInt64 where C.Element == UInt8 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}
