// keybag.seq, the record of the last keybag generation saved (dpfs(5)). It is the only
// witness that keybag.json is the newest: an older copy put back would otherwise bring
// back an old failure count, an old passcode or keys an erase destroyed. What it cannot
// vouch for counts as the worst case (PasscodePolicy.assumeWorstCase), never as zero.
import Foundation
import Glibc

public enum KeybagSequence: Equatable, Sendable {
    /// It records the keybag's generation, or an older one (a crash between the two
    /// writes of a save leaves it behind, never ahead).
    case vouches
    case missing
    /// Unreadable, or not a decimal generation number.
    case garbled
    /// It records a later generation than the keybag's: an older keybag was put back.
    case ahead(recorded: Int)

    /// Judges the record's text (nil: no such file) against the keybag's generation.
    public static func judge(recordText: String?, generation: Int) -> KeybagSequence {
        guard let recordText else { return .missing }
        let digits = recordText.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let recorded = Int(digits) else { return .garbled }
        return recorded > generation ? .ahead(recorded: recorded) : .vouches
    }

    /// Reads keybag.seq beside the keybag.
    public static func read(in directory: DeviceDirectory, generation: Int) -> KeybagSequence {
        let fd = open(directory.keybagSequencePath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return errno == ENOENT ? .missing : .garbled }
        defer { close(fd) }
        // A generation is at most 19 digits; anything longer is not one.
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        guard n >= 0, n < buffer.count, let text = String(validating: buffer[..<n], as: UTF8.self) else { return .garbled }
        return judge(recordText: text, generation: generation)
    }

    /// The generation recorded, when one could be read.
    public var recorded: Int? {
        if case .ahead(let recorded) = self { return recorded }
        return nil
    }

    /// Why the keybag's failure count cannot be trusted, or nil when the record vouches for it.
    public func distrust(generation: Int) -> String? {
        switch self {
        case .vouches: return nil
        case .missing: return "keybag.seq is missing"
        case .garbled: return "keybag.seq does not hold a generation number"
        case .ahead(let recorded):
            return "keybag.json (generation \(generation)) is older than keybag.seq (\(recorded)): an old copy was put back"
        }
    }
}
