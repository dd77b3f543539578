// dpfs clock advance: moves the device's clock forward, so that a test sees a grace
// period end, a passcode delay pass or a locked device restart without waiting.
import ArgumentParser
import DPFSProtocol

struct Clock: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The device's clock, which tests may move forward.",
        subcommands: [Advance.self])

    struct Advance: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Move the device's clock forward: what falls due on the way happens now.")
        @Argument(help: "The mountpoint.") var mountpoint: String
        // Taken as it comes, dash and all: "-5" read as an option was "a missing
        // argument", not the clock's refusal to go back.
        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("How far: 90s, 10m, 48h, 3d, or a sum such as 1h30m.",
                                                                  valueName: "duration"))
        var durationWords: [String] = []

        /// The words given, without the `--` that ends the options (it comes along).
        private var given: [String] { durationWords.filter { $0 != "--" } }
        private var duration: String { given.first ?? "" }

        func validate() throws {
            guard given.count == 1 else {
                throw ValidationError(given.isEmpty ? "Missing expected argument '<duration>'"
                                                    : "give one duration, not \(given.count)")
            }
            guard ClockDuration.seconds(in: duration) != nil else {
                let forward = duration.hasPrefix("-") ? ": the clock only moves forward" : ""
                throw ValidationError("'\(duration)' is not a duration (90s, 10m, 48h, 3d, 1h30m)\(forward)")
            }
        }

        func run() throws {
            guard let seconds = ClockDuration.seconds(in: duration) else { return }
            let reply = try DaemonDeadline.client(for: mountpoint).send(.clockAdvance(seconds: seconds))
            if let state = reply.status?.state { print("moved the clock forward by \(duration); the device is \(state.rawValue)") }
        }
    }
}

enum ClockDuration {
    /// Seconds in "90s", "10m", "48h", "3d" or a sum of them ("1h30m"); a bare number
    /// is seconds. Nil for anything else, or for nothing at all.
    static func seconds(in text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86400]
        var total = 0.0
        var number = ""
        for character in text {
            if character.isNumber || character == "." {
                number.append(character)
            } else if let unit = units[character], let value = Double(number) {
                total += value * unit
                number = ""
            } else {
                return nil
            }
        }
        if !number.isEmpty {
            guard let value = Double(number) else { return nil }
            total += value
        }
        return total > 0 && total.isFinite ? total : nil
    }
}
