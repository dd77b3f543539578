// Frees removed files off the request's path. Removing the last name of a file makes
// the backing filesystem free its blocks there and then, inside unlinkat; on ext4
// mounted with `discard` and without a journal, as here, that waits for the device to
// discard each block (160 µs per unlinkat under strace, 1.4 s of the 2.2 s `rm -rf` of
// /usr/include). So unlink moves the file's last name into the orphan directory
// (BackingPaths.swift), which frees nothing, and a few reaper threads unlink it from
// there, several at a time. (Holding the file open across the unlinkat instead would
// keep its dentry under the directory, and the rmdir that follows would spin until
// the reapers caught up.) At most `backlog` files wait: beyond that a remover waits
// for a slot, so the space comes back within milliseconds of the rm. Unmounting
// unlinks whatever still waits; a file left there by a crash goes when the next
// mount clears the orphan directory.
import BlockStore
import CLinux
import Foundation
import Glibc
import Synchronization

final class NodeReaper: Sendable {
    static let backlog = 256
    static let threads = 4
    static let namePrefix = "reaped-"

    private let orphans: Int32
    private let pending = Mutex<[String]>([])
    private let serial = Atomic<UInt64>(0)
    private let queued = DispatchSemaphore(value: 0)
    private let slots = DispatchSemaphore(value: NodeReaper.backlog)

    /// `orphans`: the orphan directory, where removed files wait.
    init(orphans: Int32) {
        self.orphans = orphans
        for index in 0..<Self.threads {
            Thread.detachNewThread { [self] in
                Thread.current.name = "dpfs-reap-\(index)"
                self.loop()
            }
        }
    }

    /// Removes `name` in `directory`, a file with one link: moves it to the orphan
    /// directory to be unlinked soon. False if it could not be moved (nothing changed).
    func remove(_ directory: Int32, _ name: UnsafePointer<CChar>) -> Bool {
        let parked = Self.namePrefix + String(serial.add(1, ordering: .relaxed).newValue)
        slots.wait()
        guard renameat2(directory, name, orphans, parked, RenameFlag.noReplace) == 0 else {
            slots.signal()
            return false
        }
        pending.withLock { $0.append(parked) }
        queued.signal()
        return true
    }

    private func loop() {
        while true {
            queued.wait()
            let name = pending.withLock { $0.isEmpty ? nil : $0.removeFirst() }
            if let name { unlinkat(orphans, name, 0) }
            slots.signal()
        }
    }

    /// Unlinks every file still waiting, on the calling thread: at unmount, so that
    /// nothing removed outlives the mount.
    func drain() {
        let names = pending.withLock { names in
            defer { names.removeAll() }
            return names
        }
        for name in names { unlinkat(orphans, name, 0) }
    }
}
