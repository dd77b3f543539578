// dpfs events: one JSON line per lock-state event, as it happens.
import ArgumentParser
import Control
import Foundation
import Glibc

struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Stream protected-data events as JSON lines.")
    @Argument(help: "The mountpoint.") var mountpoint: String

    func run() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try ControlClient(mountpoint: mountpoint).stream(.events) { reply in
            guard let event = reply.event, let line = try? encoder.encode(event) else { return true }
            FileHandle.standardOutput.write(line + Data("\n".utf8))
            return true
        }
    }
}
