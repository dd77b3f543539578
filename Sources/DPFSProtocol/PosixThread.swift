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

    /// Runs `body` on a new detached thread named `name` (at most 15 bytes, as the
    /// kernel keeps it); gives the thread, or why it did not start.
    public static func start(named name: String, _ body: @escaping @Sendable () -> Void) -> Result<pthread_t, StartError> {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        let context = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
        var thread = pthread_t()
        let code = pthread_create(&thread, &attributes, { context in
            guard let context else { return nil }
            let start = Unmanaged<Start>.fromOpaque(context).takeRetainedValue()
            dpfs_name_thread(start.name)
            start.body()
            return nil
        }, context)
        guard code == 0 else {
            Unmanaged<Start>.fromOpaque(context).release()
            return .failure(StartError(code: code))
        }
        return .success(thread)
    }

    private final class Start {
        let name: String
        let body: @Sendable () -> Void

        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }
}
