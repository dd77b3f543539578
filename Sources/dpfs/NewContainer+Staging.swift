// Where NewContainer fills a container before it is renamed into place, and how a
// staging tree being filled is told from one a killed maker left, which nothing else
// would ever remove. Each maker holds a shared flock on the containers directory for
// as long as its staging tree exists; a maker that gets the exclusive one instead
// knows no other is at work, so every staging tree there is a leftover. A flock ends
// with its holder: a killed maker leaves nothing held, and its tree goes with the
// next container made.
import Foundation
import Glibc

extension NewContainer {
    static let stagingPrefix = ".making-"

    /// Runs `fill` with the path of a new staging tree beside `path`, holding the shared
    /// lock, after removing the leftovers there when no other maker is at work.
    func withStagingTree(_ fill: (String) throws -> Void) throws {
        let containers = (path as NSString).deletingLastPathComponent
        let lock = open(containers, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard lock >= 0 else { throw failure(String(cString: strerror(errno))) }
        defer { close(lock) }
        if flock(lock, LOCK_EX | LOCK_NB) == 0 { Self.removeLeftovers(in: containers) }
        // Turning the exclusive lock into a shared one lets it go for a moment: a maker
        // that takes it then finds no staging tree of ours yet.
        while flock(lock, LOCK_SH) != 0 {
            guard errno == EINTR else { throw failure("its staging lock: \(String(cString: strerror(errno)))") }
        }
        try fill(containers + "/" + Self.stagingPrefix + UUID().uuidString)
    }

    /// Removes every staging tree in `containers`; the caller holds the exclusive lock.
    /// One that cannot be removed stays for a later maker.
    private static func removeLeftovers(in containers: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: containers)) ?? []
        for name in names where name.hasPrefix(stagingPrefix) {
            try? FileManager.default.removeItem(atPath: containers + "/" + name)
        }
    }
}
