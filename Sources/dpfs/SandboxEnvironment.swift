// The environment `dpfs run` gives a program: the caller's, with HOME and the XDG base
// directories moved into the sandbox (SPEC §10) and only dpfs's own DPFS_* variables.
import Foundation

enum SandboxEnvironment {
    static func make(mount: String, app: String, inherited: [String: String]) -> [String: String] {
        // Anything else named DPFS_* (a passcode a careless script exported, a variable of
        // another sandbox) is not the program's business.
        var environment = inherited.filter { !$0.key.hasPrefix("DPFS_") }
        environment["HOME"] = mount
        // Foundation on Linux takes NSHomeDirectory() and .documentDirectory from this.
        environment["CFFIXED_USER_HOME"] = mount
        environment["TMPDIR"] = mount + "/tmp"
        environment["XDG_CACHE_HOME"] = mount + "/Library/Caches"
        environment["XDG_DATA_HOME"] = mount + "/Library/Application Support"
        environment["XDG_CONFIG_HOME"] = mount + "/Library/Preferences"
        environment["DPFS_MOUNT"] = mount
        environment["DPFS_APP"] = app
        return environment
    }
}
