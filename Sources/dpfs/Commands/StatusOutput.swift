// `dpfs status --json`: the daemon's status, and the app runs that hold the mount
// (`runs`, only when there are any), each as `dpfs unmount` names it.
import DPFSProtocol

struct StatusOutput: Encodable {
    let status: DeviceStatus
    let runs: [AppRun]

    private struct Run: Encodable {
        let pid: Int32
        let app: String
        /// Its command line, where /proc shows it to the caller.
        let command: String?
    }

    private enum Keys: String, CodingKey { case runs }

    func encode(to encoder: any Encoder) throws {
        try status.encode(to: encoder)
        guard !runs.isEmpty else { return }
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(runs.map { Run(pid: $0.pid, app: $0.app, command: AppRunHolders.commandLine(of: $0.pid)) },
                             forKey: .runs)
    }
}
