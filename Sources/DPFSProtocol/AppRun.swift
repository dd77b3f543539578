// A process that holds an app session open (`dpfs run`, and the `dpfs run` that
// `dpfs test` starts), as the owner's status reply lists it. Its program works in the
// mount from a mount namespace of its own, where the host's umount does not see it:
// `dpfs unmount` learns of it from this list instead.
public struct AppRun: Codable, Sendable, Equatable {
    /// The process on the other end of the session's connection, as the daemon's pid
    /// namespace numbers it.
    public var pid: Int32
    /// The app it runs as.
    public var app: String

    public init(pid: Int32, app: String) {
        self.pid = pid; self.app = app
    }
}
