// The JSON of one keybag save, encoded once. A save writes the keybag twice, each time
// with a new generation and the MAC over its JSON without the MAC; only those two
// fields change, so they are put in place in the text JSONEncoder wrote rather than
// the whole keybag encoded again for each (its directory classes grow with every
// raise). The bytes are those KeybagFile.encode writes: pretty-printed, so every
// top-level field is one line of its own at an indent of two, and no string holds a
// raw newline.
import Foundation

struct KeybagText {
    /// Up to the generation's value; then the text between it and the MAC's line; the
    /// MAC's line up to its value and from after it; the rest.
    private let head: [UInt8]
    private let middle: [UInt8]
    private let macLineStart: [UInt8]
    private let macLineEnd: [UInt8]
    private let tail: [UInt8]
    var generation: Int

    /// Nil when the encoder's text does not have the expected shape: the caller then
    /// encodes the whole keybag for each write.
    init?(_ file: KeybagFile) throws {
        var placeholder = file
        placeholder.mac = Bytes([UInt8](repeating: 0, count: 32))
        let text = try KeybagFile.encode(placeholder)
        guard let generationValue = Self.valueRange(of: "generation", in: text),
              let macValue = Self.valueRange(of: "mac", in: text),
              generationValue.upperBound < macValue.lowerBound,
              let macLine = Self.lineRange(around: macValue, in: text),
              String(decoding: text[generationValue], as: UTF8.self) == String(file.generation) else {
            return nil
        }
        head = Array(text[..<generationValue.lowerBound])
        middle = Array(text[generationValue.upperBound..<macLine.lowerBound])
        macLineStart = Array(text[macLine.lowerBound..<macValue.lowerBound])
        macLineEnd = Array(text[macValue.upperBound..<macLine.upperBound])
        tail = Array(text[macLine.upperBound...])
        generation = file.generation
    }

    /// The keybag's JSON without its MAC: what the MAC covers.
    var unsigned: [UInt8] {
        head + Array(String(generation).utf8) + middle + tail
    }

    /// The keybag's JSON as written, with `mac`.
    func signed(mac: Bytes) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let value = [UInt8](try encoder.encode(mac))
        return head + Array(String(generation).utf8) + middle + macLineStart + value + macLineEnd + tail
    }

    /// Where the value of the top-level field `key` lies, up to the comma or newline
    /// after it (a field's value here is a number or a string on one line).
    private static func valueRange(of key: String, in text: [UInt8]) -> Range<Int>? {
        let marker = Array("\n  \"\(key)\" : ".utf8)
        guard let start = firstRange(of: marker, in: text)?.upperBound else { return nil }
        var end = start
        while end < text.count, text[end] != UInt8(ascii: ","), text[end] != UInt8(ascii: "\n") { end += 1 }
        guard end < text.count, text[end] == UInt8(ascii: ",") else { return nil }
        return start..<end
    }

    /// The whole line holding `range`, its newline included.
    private static func lineRange(around range: Range<Int>, in text: [UInt8]) -> Range<Int>? {
        guard let newlineBefore = text[..<range.lowerBound].lastIndex(of: UInt8(ascii: "\n")),
              let newlineAfter = text[range.upperBound...].firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        return (newlineBefore + 1)..<(newlineAfter + 1)
    }

    /// A plain byte search: the generic one Foundation offers costs more than the
    /// encoding this saves.
    private static func firstRange(of marker: [UInt8], in text: [UInt8]) -> Range<Int>? {
        guard let first = marker.first, text.count >= marker.count else { return nil }
        for index in 0...(text.count - marker.count) where text[index] == first {
            if text[index..<(index + marker.count)].elementsEqual(marker) { return index..<(index + marker.count) }
        }
        return nil
    }
}
