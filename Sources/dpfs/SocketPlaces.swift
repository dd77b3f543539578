// Where daemons put their control sockets (Daemon.socketPlace): root's /run/dpfs, a
// user's runtime directory, /tmp/dpfs-UID, or a private mkdtemp directory beside it.
// dpfs run hides every one of them from the app, not only its own daemon's: an owner's
// socket takes any program of the user, and another device's daemon may have been
// started with another XDG_RUNTIME_DIR than this run's.
import Foundation
import Glibc

enum SocketPlaces {
    static let root = "/run/dpfs"

    static func shared(_ uid: uid_t) -> String { "/tmp/dpfs-\(uid)" }

    /// $XDG_RUNTIME_DIR/dpfs, with the variable's value; nil when the variable is unset,
    /// empty or relative. The XDG Base Directory spec has a relative value ignored: it
    /// would name another directory from each working directory, one `dpfs run` of
    /// another would not know to hide.
    static func runtime(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> (variable: String, directory: String)? {
        guard let variable = environment["XDG_RUNTIME_DIR"], variable.hasPrefix("/") else { return nil }
        return (variable, variable + "/dpfs")
    }

    /// The mkdtemp template of a private directory used when /tmp/dpfs-UID is not ours.
    static func privateTemplate(_ uid: uid_t) -> String { "/tmp/dpfs-\(uid)-XXXXXX" }

    /// The places above that are this user's private directories now (root's too), with
    /// every mkdtemp directory of this user's.
    static func candidates() -> [String] {
        let uid = getuid()
        var places = [root, shared(uid)]
        if let runtime = runtime() { places.append(runtime.directory) }
        let prefix = "dpfs-\(uid)-"
        if let names = try? FileManager.default.contentsOfDirectory(atPath: "/tmp") {
            places += names.filter { $0.hasPrefix(prefix) && $0.count == prefix.count + 6 }.map { "/tmp/" + $0 }
        }
        return places.filter { isPrivateDirectory($0, of: uid) }
    }

    private static func isPrivateDirectory(_ path: String, of uid: uid_t) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR && (info.st_uid == uid || info.st_uid == 0)
            && info.st_mode & 0o077 == 0
    }
}
