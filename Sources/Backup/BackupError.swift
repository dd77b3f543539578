// Why a backup could not be written or read: each one line for the user, none of them
// naming a file, an item or anything else the backup protects.
public enum BackupError: Error, CustomStringConvertible, Equatable {
    case notABackup
    case unsupportedVersion(UInt16)
    /// Written by a newer dpfs, in a format this one cannot read.
    case newerVersion(UInt16)
    /// The key stretched from the password fails the header's key check: the password
    /// is wrong, or the header was altered.
    case wrongPassword
    case damaged(String)
    case truncated
    case trailingData
    case io(String)
    case outOfMemory

    public var description: String {
        switch self {
        case .notABackup: return "not a dpfs backup file"
        case .unsupportedVersion(let version):
            return "backup format version \(version) is not supported (this dpfs reads versions "
                + "\(BackupHeader.oldestVersion) to \(BackupHeader.currentVersion))"
        case .newerVersion(let version):
            return "the backup was written by a newer dpfs, in format version \(version) (this dpfs reads versions "
                + "\(BackupHeader.oldestVersion) to \(BackupHeader.currentVersion)); restore it with that dpfs or a later one"
        case .wrongPassword: return "wrong backup password (or a damaged backup header); nothing was restored"
        case .damaged(let why): return "the backup is damaged: \(why); nothing was restored"
        case .truncated: return "the backup is truncated: it ends before its final chunk; nothing was restored"
        case .trailingData: return "the backup is damaged: data follows its final chunk; nothing was restored"
        case .io(let why): return why
        case .outOfMemory: return "not enough memory to stretch the backup password"
        }
    }
}
