// Asks libfuse whether it takes a mount's -o options, before anything is mounted, and
// reads which ones it does not know from what it logs (option_check.c).
import Foundation
import FuseLoop

public enum FuseOptionCheck {
    public enum Refusal: Error, Equatable {
        /// The options libfuse does not know, as they were given.
        case unknown([String])
        /// Refused for another reason: libfuse's own words.
        case other(String)
    }

    /// Nil when libfuse takes `options` (comma-separated, as after -o).
    public static func refusal(of options: [String]) -> Refusal? {
        let joined = options.joined(separator: ",")
        guard !joined.isEmpty else { return nil }
        var why = [CChar](repeating: 0, count: 1024)
        guard dpfs_fuse_check_options(joined, &why, why.count) != 0 else { return nil }
        let logged = String(decoding: why.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return refusal(logged: logged)
    }

    /// What libfuse's log says: "fuse: unknown option(s): `-o a,b'" names the options.
    static func refusal(logged: String) -> Refusal {
        let text = logged.trimmingCharacters(in: .whitespacesAndNewlines)
        let marker = "unknown option(s): `"
        guard let start = text.range(of: marker), let end = text.lastIndex(of: "'"), start.upperBound <= end else {
            let words = text.hasPrefix("fuse: ") ? String(text.dropFirst("fuse: ".count)) : text
            return .other(words.isEmpty ? "libfuse refused them" : words)
        }
        var unknown: [String] = []
        for argument in text[start.upperBound..<end].split(separator: " ") where argument != "-o" {
            let list = argument.hasPrefix("-o") ? argument.dropFirst(2) : argument
            unknown += splitOptions(String(list))
        }
        return .unknown(unknown)
    }

    /// Options split at the commas libfuse splits at: not one after a backslash.
    public static func splitOptions(_ list: String) -> [String] {
        var options: [String] = []
        var current = ""
        var escaped = false
        for character in list {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                current.append(character)
                escaped = true
            } else if character == "," {
                options.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        options.append(current)
        return options.filter { !$0.isEmpty }
    }
}
