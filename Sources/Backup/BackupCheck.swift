// The first pass of a restore: reads a backup to its FINAL chunk, checking every
// record, so that a wrong password, a damaged or truncated file, or a record that does
// not fit (a path outside the tree, a link to nothing) is refused before anything is
// created. What it learns that restore needs first (the device's settings, the apps)
// it keeps.
import DPFSProtocol

public struct BackupContents: Sendable {
    public var device = BackupRecord(.device)
    public var apps: [BackupRecord] = []
    public var items = 0
    public var files = 0
    public var directories = 0
    public var symlinks = 0
    public var hardLinks = 0
    public var contentBytes: UInt64 = 0
    /// Files the backup left out for failing to read (dpfs backup --skip-damaged).
    public var damagedFiles = 0
}

public enum BackupCheck {
    /// Reads every record of `stream` (from its start) and checks the whole; content is
    /// read and dropped. `progress` is called now and then; what it throws ends the run.
    public static func run(_ stream: OpeningStream, progress: (() throws -> Void)? = nil) throws -> BackupContents {
        var contents = BackupContents()
        var tree = TreeCheck()
        let first = try stream.readRecord()
        guard first.kind == .device else { throw BackupError.damaged("it does not begin with its device record") }
        contents.device = first
        var records = 1
        while true {
            let record = try stream.readRecord()
            switch record.kind {
            case .end:
                guard record.integer("count") == Int64(records) else {
                    throw BackupError.damaged("its end record counts \(record.text("count") ?? "?") records, not \(records)")
                }
                try stream.expectEnd()
                return contents
            case .device:
                throw BackupError.damaged("it holds a second device record")
            case .app:
                guard record.text("bundleID") != nil else { throw BackupError.damaged("an app record names no app") }
                contents.apps.append(record)
            case .item:
                var size = 0
                try stream.readContent { size += $0.count }
                guard size <= ControlProtocol.maxItemDataSize else { throw BackupError.damaged("an item's data is too large") }
                contents.items += 1
            case .directory, .file, .symlink, .hardLink:
                try tree.check(record)
                switch record.kind {
                case .directory: contents.directories += 1
                case .symlink: contents.symlinks += 1
                case .hardLink: contents.hardLinks += 1
                default:
                    let whole = try stream.readFileContent { part in
                        if case .bytes(let piece) = part { contents.contentBytes += UInt64(piece.count) }
                        try progress?()
                    }
                    if whole {
                        contents.files += 1
                    } else {
                        tree.forget(record)
                        contents.damagedFiles += 1
                    }
                }
            }
            records += 1
            try progress?()
        }
    }
}

/// The tree's rules: the root first, every path valid and new, every parent a
/// directory already seen, every hard link to a file already seen.
struct TreeCheck {
    private var directories: Set<[UInt8]> = []
    private var files: Set<[UInt8]> = []
    private var seen: Set<[UInt8]> = []

    /// A file left out (its content abandoned): no hard link may name it, and its path
    /// may come again (as a further name of the same file, left out too).
    mutating func forget(_ record: BackupRecord) {
        guard let path = record.fields["path"] else { return }
        files.remove(path)
        seen.remove(path)
    }

    mutating func check(_ record: BackupRecord) throws {
        guard let path = record.fields["path"], SandboxPath.isValid(path) else {
            throw BackupError.damaged("a record's path is not a path inside the sandbox")
        }
        if seen.isEmpty {
            guard record.kind == .directory, path.isEmpty else { throw BackupError.damaged("its tree does not begin at the root") }
        } else {
            guard let parent = SandboxPath.parent(path), directories.contains(parent) else {
                throw BackupError.damaged("a record's parent directory is not in the backup")
            }
        }
        guard seen.insert(path).inserted else { throw BackupError.damaged("a path appears twice") }
        switch record.kind {
        case .directory:
            directories.insert(path)
        case .file:
            files.insert(path)
        case .hardLink:
            guard let target = record.fields["target"], files.contains(target) else {
                throw BackupError.damaged("a hard link points to no file of the backup")
            }
        case .symlink:
            guard let target = record.fields["target"], !target.isEmpty, !target.contains(0) else {
                throw BackupError.damaged("a symbolic link has no target")
            }
        default:
            break
        }
        if record.kind != .symlink && record.kind != .hardLink {
            guard let mode = record.integer("mode"), (0...0o7777).contains(mode),
                  RecordTime.decode(record.fields["mtime"]) != nil, RecordTime.decode(record.fields["atime"]) != nil else {
                throw BackupError.damaged("a record's mode or times are not valid")
            }
            guard let name = record.text("class"), ProtectionClass(name: name) != nil else {
                throw BackupError.damaged("a record's protection class is not valid")
            }
        }
    }
}
