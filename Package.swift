// swift-tools-version:6.0
import PackageDescription

/// Test hooks (DPFS_TEST_DELAY_SCALE) are compiled into debug builds only: a release
/// binary has no such code.
let testHooks: [SwiftSetting] = [.define("DPFS_TEST_HOOKS", .when(configuration: .debug))]

let package = Package(
    name: "dpfs",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "dpfs", targets: ["dpfs"]),
        // Libraries for the separate Fuzz/ and Benchmarks/ packages.
        .library(name: "DataProtection", targets: ["DataProtection"]),
        .library(name: "Control", targets: ["Control"]),
        .library(name: "DPFSProtocol", targets: ["DPFSProtocol"]),
        .library(name: "ItemStore", targets: ["ItemStore"]),
        // For app code: Apple's SecItem API against the mounted device; file
        // protection, protected-data state and notifications, and a device to lock from tests.
        .library(name: "Security", targets: ["Security"]),
        .library(name: "DataProtectionKit", targets: ["DataProtectionKit"]),
        // LAContext, answered by the device's simulated user (dpfs biometry).
        .library(name: "LocalAuthentication", targets: ["LocalAuthentication"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // P-256, SHA-256, AES-GCM and the X9.63 KDF of SecKey (no hand-written curve code).
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.0"),
    ],
    targets: [
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium",
                       providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CFuse", pkgConfig: "fuse3",
                       providers: [.apt(["libfuse3-dev"])]),
        .systemLibrary(name: "CLinux"),
        // The sqlite3_db_config call GRDB does not make, for the keychain's untouched reads.
        .systemLibrary(name: "CSQLiteConfig"),
        // The session loop and FUSE over io_uring, in C: libfuse's own loop does not
        // fit the daemon's memory, and libfuse 3.14 does not speak io_uring.
        .target(name: "FuseLoop", dependencies: ["CFuse"], linkerSettings: [.linkedLibrary("uring")]),
        // tpm2-tss: ESAPI (tss2-esys), the TCTI loader (tss2-tctildr) and tss2-mu, all
        // from Debian's libtss2-dev; the module map links the three.
        .systemLibrary(name: "CTss", pkgConfig: "tss2-esys",
                       providers: [.apt(["libtss2-dev"])]),
        // sd-bus, for logind's signals: dpfs mount --lock-on.
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd",
                       providers: [.apt(["libsystemd-dev"])]),
        // libpq, for keychain sync through PostgreSQL (docs/design.md says why not postgres-nio).
        // libpq's headers only (no pkgConfig: its flags would link the library); it is
        // dlopen'ed at the first sync connection (PostgresLoader).
        .systemLibrary(name: "CPostgres", providers: [.apt(["libpq-dev"])]),
        .target(name: "PostgresLoader", dependencies: ["CPostgres"], linkerSettings: [.linkedLibrary("dl")]),
        // The control protocol and its client, for the libraries apps link: typed
        // messages, framing, secrets in locked memory, finding a mount's daemon. It
        // links nothing beyond the C library (no libsodium, SQLite or tpm2-tss).
        .target(name: "DPFSProtocol", dependencies: ["CLinux"]),
        .target(name: "DataProtection", dependencies: ["DPFSProtocol", "CSodium", "CLinux", "CTss"], swiftSettings: testHooks),
        .target(name: "ItemStore", dependencies: [
            "DataProtection", "DPFSProtocol",
            .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift"),
            "CSQLiteConfig", "SecKeyCrypto",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The filesystem core's system shims: Errno (its one error type, thrown), the
        // Linux flags Glibc does not show, and the wrappers that turn a C call's
        // "-1 and errno" into a thrown Errno.
        .target(name: "SystemCalls", dependencies: ["CLinux"]),
        // FUSE-free file content: header I/O, block seal/open, workers, buffers, holes, fsck.
        .target(name: "BlockStore", dependencies: ["DataProtection", "DPFSProtocol", "SystemCalls", "CLinux"]),
        .target(name: "SandboxFS", dependencies: [
            "DataProtection", "DPFSProtocol", "BlockStore", "SystemCalls", "CFuse", "FuseLoop", "CLinux",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // Keychain sync of synchronizable items between the devices of one account.
        .target(name: "KeychainSync", dependencies: [
            "DataProtection", "DPFSProtocol", "ItemStore", "CPostgres", "PostgresLoader",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "Control", dependencies: ["DPFSProtocol", "DataProtection", "ItemStore", "KeychainSync", "CLinux"]),
        // SecKey's P-256 work (ECDSA, Apple's ECIES, key encodings) on swift-crypto,
        // shared by the app's Security library and the daemon's item store.
        .target(name: "SecKeyCrypto", dependencies: [.product(name: "Crypto", package: "swift-crypto")]),
        // The backup file: Argon2id-stretched key, secretstream chunks, records (dpfs backup/restore).
        .target(name: "Backup", dependencies: ["DataProtection", "DPFSProtocol", "CSodium", "CLinux", "SystemCalls"]),
        .target(name: "Security", dependencies: ["DPFSProtocol", "CLinux", "SecKeyCrypto"]),
        .executableTarget(name: "dpfs", dependencies: [
            "DPFSProtocol", "DataProtection", "BlockStore", "SandboxFS", "Control", "ItemStore", "KeychainSync", "CSystemd", "Backup",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: testHooks),
        .target(name: "DataProtectionKit", dependencies: ["DPFSProtocol", "CLinux"]),
        .target(name: "LocalAuthentication", dependencies: ["DPFSProtocol"]),
        // Runnable examples (docs/apps.md, Tests/scenarios/examples_*.sh).
        .executableTarget(name: "ExampleFileProtection", dependencies: ["DataProtectionKit"],
                          path: "Sources/Examples/ExampleFileProtection"),
        .executableTarget(name: "ExampleProtectedDataObserver", dependencies: ["DataProtectionKit"],
                          path: "Sources/Examples/ExampleProtectedDataObserver"),
        .executableTarget(name: "ExampleSandboxPaths", path: "Sources/Examples/ExampleSandboxPaths"),
        .executableTarget(name: "ExampleInactiveExpiry", dependencies: ["DataProtectionKit"],
                          path: "Sources/Examples/ExampleInactiveExpiry"),
        .target(name: "ExampleSupport", dependencies: ["Security"], path: "Sources/Examples/Support"),
        .executableTarget(name: "ExampleKeychainPassword", dependencies: ["Security", "ExampleSupport"],
                          path: "Sources/Examples/KeychainPassword"),
        .executableTarget(name: "ExampleSharedAccessGroup", dependencies: ["Security", "ExampleSupport"],
                          path: "Sources/Examples/SharedAccessGroup"),
        .executableTarget(name: "ExampleSynchronizableItem", dependencies: ["Security", "ExampleSupport"],
                          path: "Sources/Examples/SynchronizableItem"),
        .executableTarget(name: "ExampleBiometryGatedToken",
                          dependencies: ["Security", "LocalAuthentication", "DataProtectionKit", "ExampleSupport"],
                          path: "Sources/Examples/BiometryGatedToken"),
        .executableTarget(name: "ExampleSecureEnclaveSigningKey", dependencies: ["Security", "ExampleSupport"],
                          path: "Sources/Examples/SecureEnclaveSigningKey"),
        // The test device every test target that needs one makes (Tests/TestSupport).
        .target(name: "TestSupport", dependencies: ["DataProtection"], path: "Tests/TestSupport"),
        .testTarget(name: "DataProtectionTests", dependencies: ["DataProtection", "TestSupport"]),
        .testTarget(name: "ItemStoreTests", dependencies: [
            "ItemStore", "DataProtection", "DPFSProtocol", "TestSupport", "SecKeyCrypto",
            .product(name: "Crypto", package: "swift-crypto"),
        ]),
        .testTarget(name: "KeychainSyncTests", dependencies: ["KeychainSync", "DataProtection", "DPFSProtocol", "ItemStore", "TestSupport"]),
        .testTarget(name: "SandboxFSTests", dependencies: ["SandboxFS", "BlockStore", "SystemCalls", "DPFSProtocol"]),
        .testTarget(name: "BlockStoreTests", dependencies: ["BlockStore", "SystemCalls", "DataProtection", "DPFSProtocol", "TestSupport", "CLinux"]),
        .testTarget(name: "DPFSProtocolTests", dependencies: ["DPFSProtocol", "CLinux"]),
        .testTarget(name: "SecKeyCryptoTests", dependencies: ["SecKeyCrypto", .product(name: "Crypto", package: "swift-crypto")]),
        .testTarget(name: "ControlTests", dependencies: ["Control", "DPFSProtocol"]),
        .testTarget(name: "BackupTests", dependencies: ["Backup", "DataProtection", "DPFSProtocol", "CLinux"]),
        // Depend on the dpfs executable so that `swift test` builds the binary they mount with.
        .testTarget(name: "DataProtectionKitTests", dependencies: ["DataProtectionKit", "dpfs"]),
        .testTarget(name: "SecurityTests", dependencies: ["Security", "LocalAuthentication", "dpfs"]),
    ],
    swiftLanguageModes: [.v6]
)
