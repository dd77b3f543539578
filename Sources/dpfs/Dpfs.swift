// The dpfs command line: one subcommand per file under Commands/.
import ArgumentParser

@main
struct Dpfs: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dpfs",
        abstract: "iOS Data Protection for Linux: a sandbox whose files obey a simulated device lock.",
        discussion: "See dpfs(1) for every command and dpfs(5) for the on-disk format.",
        subcommands: [
            Init.self, Mount.self, Unmount.self, Unlock.self, Lock.self, Restart.self, Status.self,
            Passcode.self, Protection.self, Events.self, Fsck.self, Keychain.self, App.self, Run.self, TPMLockout.self,
        ]
    )
}
