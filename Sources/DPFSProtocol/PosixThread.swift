// Starting a thread that may not start. Foundation's Thread.start says nothing when
// pthread_create fails (a user's RLIMIT_NPROC reached, a cgroup's pids.max, no memory
// for a stack): the daemon went on as if the thread ran, and a control server whose
// workers had all been replaced by threads that never ran answered nothing again.
// Here the caller learns it, and keeps its own place or says so.
import CLinux
import Glibc

public enum PosixThread {
    /// Why a thread did not start: pthread_create's error.
    public struct StartError: Error, CustomStringConvertible {
        public let code: Int32
        public init(code: Int32) { self.code = code }
        public var description: String { "cannot start a thread: \(String(cString: strerror(code)))" }
    }

    /// A way to start a thread: `start(named:_:)`, or, in a test, one that fails at will.
    public typealias Start = @Sendable (_ name: String, _ body: @escaping @Sendable () -> Void)
        throws(StartError) -> pthread_t

    /// Runs `body` on a new detached thread named `name` (at most 15 bytes, as the
    /// kernel keeps it); gives the thread, or throws why it did not start.
    @discardableResult
    public static func start(named name: String, _ body: @escaping @Sendable () -> Void) throws(StartError) -> pthread_t {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let context = Unmanaged.passRetained(Launch(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let code = pthread_create(&thread, &attributes, { context in
            guard let context else { return nil }
            let launch = Unmanaged<Launch>.fromOpaque(context).takeRetainedValue()
            dpfs_name_thread(launch.name)
            launch.body()
            return nil
        }, context)
        guard code == 0 else {
            Unmanaged<Launch>.fromOpaque(context).release()
            throw StartError(code: code)
        }
        return thread
    }

    /// What the new thread runs, handed to it through pthread_create's argument.
    private final class Launch {
        let name: String
        let body: @Sendable () -> Void

        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
