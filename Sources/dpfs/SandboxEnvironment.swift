// The environment `dpfs run` gives a program: the caller's, with HOME and the XDG base
// directories moved into the sandbox and only dpfs's own DPFS_* variables. `DPFS`
// names the running dpfs unless the caller named one, so a test that locks the device
// with the command runs the dpfs that runs it, installed or not.
import DPFSProtocol
import Foundation

enum SandboxEnvironment {
    static func make(mount: String, home: String, app: String, socket: String, dpfs: String?,
                     inherited: [String: String]) -> [String: String] {
        // Anything else named DPFS_* (a passcode a careless script exported, a variable of
        // another sandbox) is not the program's business.
        var environment = inherited.filter { !$0.key.hasPrefix("DPFS_") }
        environment["HOME"] = home
        // Foundation on Linux takes NSHomeDirectory() and .documentDirectory from this.
        environment["CFFIXED_USER_HOME"] = home
        environment["TMPDIR"] = home + "/tmp"
        environment["XDG_CACHE_HOME"] = home + "/Library/Caches"
        environment["XDG_DATA_HOME"] = home + "/Library/Application Support"
        environment["XDG_CONFIG_HOME"] = home + "/Library/Preferences"
        environment["DPFS_MOUNT"] = mount
        environment["DPFS_APP"] = app
        environment[AppSocket.environmentKey] = socket
        if environment["DPFS"] == nil { environment["DPFS"] = dpfs }
        return environment
    }
}
