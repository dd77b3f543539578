// sync.json as the daemon last read or wrote it. The daemon is the file's only writer
// while it runs: it reads the file once and writes it (atomically) when the state
// changes, rather than parsing megabytes of entries at every round of an idle
// account. After a write that failed, the file may hold either state: it is read again.
import DataProtection
import Synchronization

final class KeptSyncState: Sendable {
    private enum Kept: Sendable {
        case unread
        case read(SyncState?)
    }

    private let directory: DeviceDirectory
    private let kept = Mutex<Kept>(.unread)

    init(directory: DeviceDirectory) { self.directory = directory }

    /// The state; nil when the device is in no account. Reads the file the first time.
    func current() throws -> SyncState? {
        try kept.withLock { kept in
            if case .read(let state) = kept { return state }
            let state = try SyncState.load(from: directory)
            kept = .read(state)
            return state
        }
    }

    func save(_ state: SyncState) throws {
        try kept.withLock { kept in
            kept = .unread
            try state.save(in: directory)
            kept = .read(state)
        }
    }

    func remove() throws {
        try kept.withLock { kept in
            kept = .unread
            try SyncState.remove(from: directory)
            kept = .read(nil)
        }
    }
}
