// dpfs events: one JSON line per lock-state event, as it happens.
import ArgumentParser
import DPFSProtocol
import Foundation
import Glibc

struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stream protected-data events as JSON lines.")
    @Argument(help: "The mountpoint.") var mountpoint: String
    @Flag(name: .shortAndLong, help: "No line on standard error once subscribed.") var quiet = false

    func run() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            try DaemonDeadline.client(for: mountpoint).stream(.events) { reply in
                // The daemon's first reply: from here on no event is missed, which a
                // script waits for before it locks. Standard output stays events only.
                if reply.event == nil, let status = reply.status {
                    if !quiet {
                        let line = "dpfs events: subscribed to \(mountpoint) (state: \(status.state.rawValue))\n"
                        FileHandle.standardError.write(Data(line.utf8))
                    }
                    return true
                }
                guard let event = reply.event, let line = try? encoder.encode(event) else { return true }
                FileHandle.standardOutput.write(line + Data("\n".utf8))
                return true
            }
        } catch FrameError.malformed, FrameError.io {
            // A subscriber dropped mid-frame sees the stream cut: the end, as below.
        }
        // The stream ends when the mount goes away, when the daemon dies, or when the
        // daemon drops a subscriber that fell behind; a daemon that still answers says
        // the last, a dead mount left in place the second.
        if (try? DaemonDeadline.client(for: mountpoint).send(.status)) != nil {
            throw CLIError("the daemon dropped this event stream: its events were not read in time "
                           + "(a subscriber that falls behind is dropped, so that it never delays a lock)")
        }
        if DeadMount.shown(at: mountpoint) != nil {
            throw CLIError("the daemon died; its mount fails closed until dpfs unmount or the next dpfs mount")
        }
    }
}
