// dpfs unmount: unmounts and waits for the daemon to finish.
import ArgumentParser
import Control
import Foundation
import Glibc

struct Unmount: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Unmount a sandbox and stop its daemon.")
    @Argument(help: "The mountpoint.") var mountpoint: String

    func run() throws {
        let target = absolutePath(mountpoint)
        let pid = (try? ControlClient(mountpoint: target).send(.status))?.status?.pid
        guard pid != nil || isMountpoint(target) else { throw CLIError("\(target) is not a mounted dpfs sandbox") }
        let fusermount = Process()
        fusermount.executableURL = URL(fileURLWithPath: "/bin/fusermount3")
        fusermount.arguments = ["-u", target]
        fusermount.standardError = FileHandle.nullDevice
        try? fusermount.run()
        fusermount.waitUntilExit()
        if fusermount.terminationStatus != 0 && umount(target) != 0 {
            throw CLIError("cannot unmount \(target): \(String(cString: strerror(errno)))")
        }
        // Wait for the daemon to flush and exit, so the device can be mounted again.
        if let pid {
            for _ in 0..<200 where kill(pid, 0) == 0 { usleep(50_000) }
        }
    }

    private func isMountpoint(_ path: String) -> Bool {
        let mounts = (try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? ""
        return mounts.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            return fields.count > 2 && fields[1] == Substring(path) && fields[2].hasPrefix("fuse.dpfs")
        }
    }
}
