// Mounts a filesystem with libfuse and serves it until unmounted: fuse_new with the
// operation table, fuse_mount, signal handlers, the multithreaded loop.
import CFuse
import DataProtection
import Foundation
import Glibc

public enum MountError: Error, CustomStringConvertible {
    case setup(String)
    case mount(String)

    public var description: String {
        switch self {
        case .setup(let why): return "cannot set up the FUSE session: \(why)"
        case .mount(let path): return "cannot mount on \(path) (is /dev/fuse available and the mountpoint a directory?)"
        }
    }
}

public final class MountSession {
    let fileSystem: SandboxFileSystem
    let mountpoint: String
    let fuse: OpaquePointer
    private var arguments: [UnsafeMutablePointer<CChar>?]

    /// `options` are FUSE mount options (as after -o), comma-separated strings.
    public init(fileSystem: SandboxFileSystem, mountpoint: String, options: [String]) throws {
        self.fileSystem = fileSystem
        self.mountpoint = mountpoint
        let device = fileSystem.device.directory.root
        var all = ["default_permissions", "fsname=dpfs:\(device)", "subtype=dpfs"]
        if !ProcessInfo.processInfo.environment.keys.contains("DPFS_NO_AUTO_UNMOUNT") {
            all.append("auto_unmount")  // a killed daemon leaves no dead mount behind
        }
        all += options
        arguments = []
        for argument in ["dpfs", "-o", all.joined(separator: ",")] { arguments.append(strdup(argument)) }
        var args = fuse_args(argc: Int32(arguments.count), argv: nil, allocated: 0)
        let made: OpaquePointer? = arguments.withUnsafeMutableBufferPointer { argv in
            args.argv = argv.baseAddress
            var ops = makeOperations()
            let context = Unmanaged.passRetained(fileSystem).toOpaque()
            return dpfs_fuse_new(&args, &ops, context)
        }
        guard let made else { throw MountError.setup("fuse_new rejected the options \(all.joined(separator: ","))") }
        fuse = made
        fileSystem.fuse = made
        guard fuse_mount(made, mountpoint) == 0 else {
            fuse_destroy(made)
            throw MountError.mount(mountpoint)
        }
        _ = fuse_set_signal_handlers(fuse_get_session(made))
    }

    /// Serves requests until the filesystem is unmounted or the daemon is signalled.
    public func serve() -> Int32 {
        let rc = dpfs_fuse_loop_mt(fuse, 16)
        fuse_remove_signal_handlers(fuse_get_session(fuse))
        fuse_unmount(fuse)
        fuse_destroy(fuse)
        for argument in arguments { free(argument) }
        return rc
    }
}
