// The view of the machine a program under `dpfs run` gets, made by bubblewrap (bwrap):
// its own mount and PID namespaces and no capabilities, in which
//  - the owner's control socket, the device directory, the file secret store, other
//    dpfs mounts, and the directories and file stores of the other devices
//    (DevicesAtRest) are empty directories, so the program can neither reach the
//    device as its owner nor copy what is at rest of it or of another device — also
//    when one of them holds the caller's working directory (the program then starts
//    in its container) or the mount (shown again on its own);
//  - the mountpoint shows the app's own container only (another app's container,
//    .containers/BUNDLE_ID of the mount, is bound over it; the sandbox's own app does
//    not see .containers);
//  - only the app socket of its session is left of the owner's socket directory;
//  - its own /proc, so no other process's root (/proc/PID/root) leads outside.
// The program runs under `dpfs sandbox-init`, its PID 1, which forwards the signals
// `dpfs run` passes on: bwrap itself forwards none.
import DataProtection
import Foundation
import Glibc

struct AppView {
    static let containersDirectory = ".containers"

    let mount: String
    let session: AppSession

    /// The app's container as the developer's shell sees it.
    var container: String {
        session.isSandboxApp ? mount : "\(mount)/\(Self.containersDirectory)/\(session.bundleID)"
    }

    /// The directories of another app's container, as Foundation finds them.
    static let containerSubdirectories = ["Documents", "Library/Caches", "Library/Application Support",
                                          "Library/Preferences", "tmp"]

    /// Makes another app's container on first use, of the class its entitlement names
    /// (NewContainer); one that exists keeps the classes it has, which the user may
    /// have changed, and gets back only the directories it lacks. For the sandbox's
    /// own app, makes `.containers` itself, so that the view always hides it: were it
    /// missing, the app could make it in the mount and plant files in another app's
    /// container before that app first ran.
    func makeContainer() throws {
        let id = session.bundleID
        guard !id.isEmpty, id != ".", id != "..", !id.contains("/") else {
            throw CLIError("\(id) cannot name a container directory")
        }
        try createDirectory("\(mount)/\(Self.containersDirectory)")
        if session.isSandboxApp { return }
        if !FileManager.default.fileExists(atPath: container) {
            try NewContainer(path: container, bundleID: id, protectionClass: session.containerClass(),
                             subdirectories: Self.containerSubdirectories).make()
        }
        for subdirectory in Self.containerSubdirectories { try createDirectory(container + "/" + subdirectory) }
    }

    private func createDirectory(_ directory: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw CLIError("cannot make the container of \(session.bundleID) in \(mount): \((error as NSError).localizedDescription)")
        }
    }

    /// bwrap's command line for `command`, writing the sandbox's PID 1 to `infoFD`.
    func command(_ command: [RawArgument], infoFD: Int32, dpfsBinary: String, workingDirectory: String) throws -> [RawArgument] {
        var arguments = ["bwrap", "--dev-bind", "/", "/", "--proc", "/proc", "--unshare-pid",
                         "--cap-drop", "ALL", "--die-with-parent", "--as-pid-1", "--info-fd", String(infoFD)]
        let hidden = try hiddenPaths()
        for path in Self.outermost(hidden) { arguments += ["--tmpfs", path] }
        // bwrap takes a bind's source from the machine's own view, so what a hidden
        // directory holds and the program needs comes back alone, the rest still hidden;
        // and what such a bind brings back of a hidden directory is hidden again where
        // the bind shows it.
        var shown: [(source: String, destination: String)] = []
        if session.isSandboxApp {
            if Self.isInside(mount, anyOf: hidden) { shown.append((mount, mount)) }
        } else {
            shown.append((container, mount))
        }
        for bind in shown { arguments += ["--bind", bind.source, bind.destination] }
        for path in hidden {
            for bind in shown where path != bind.source && isPath(path, within: bind.source) {
                arguments += ["--tmpfs", bind.destination + path.dropFirst(bind.source.count)]
            }
        }
        if session.isSandboxApp { arguments += ["--tmpfs", "\(mount)/\(Self.containersDirectory)"] }
        // Last, so that no directory laid over them above covers them.
        if Self.isInside(dpfsBinary, anyOf: hidden) { arguments += ["--ro-bind", dpfsBinary, dpfsBinary] }
        arguments += ["--bind", session.socket, session.socket]
        // A working directory the view hides is no place to start (bwrap alone would
        // start the program in the empty directory laid over it, or in HOME when that
        // has no such path): the program starts in its container, as it would anywhere.
        if Self.isInside(AbsolutePath.of(workingDirectory), anyOf: hidden + ["\(mount)/\(Self.containersDirectory)"]) {
            arguments += ["--chdir", mount]
        }
        arguments += ["--", dpfsBinary, "sandbox-init", "--"]
        return arguments.map(RawArgument.init) + command
    }

    /// What holds this device's or another's secrets or files, with symbolic links
    /// resolved, as the working directory and the mount are when compared with them:
    /// the owner's socket directory, the device directory and its `file` store, the
    /// other dpfs mounts, and every device directory and store DevicesAtRest knows.
    /// Only directories this user reaches: what does not exist or lies behind a
    /// directory it cannot search, the program cannot read either. "/" is never one:
    /// a store there would hide the whole machine, the program's own libraries too.
    private func hiddenPaths() throws -> [String] {
        var paths = [(session.socket as NSString).deletingLastPathComponent, session.status.deviceDirectory]
        if let store = session.status.secretStore, store.hasPrefix("file:") { paths.append(String(store.dropFirst(5))) }
        let others = try OtherDpfsMounts.answering(besides: mount)
        paths += others.mountPoints + others.socketDirectories + SocketPlaces.candidates()
        paths += DevicesAtRest.directories()
        // The app's container is what it must see: a directory that is or holds it is
        // hidden around it (the bind above), never in its place.
        return Array(Set(paths.map(AbsolutePath.of).filter { $0 != "/" && $0 != container && isDirectory($0) })).sorted()
    }

    /// `paths` without those inside another of them, which its empty directory hides already.
    private static func outermost(_ paths: [String]) -> [String] {
        paths.filter { path in !paths.contains { $0 != path && isPath(path, within: $0) } }
    }

    private static func isInside(_ path: String, anyOf directories: [String]) -> Bool {
        directories.contains { isPath(path, within: $0) }
    }

    private func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }
}
