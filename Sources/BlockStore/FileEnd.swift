// How a backing file ends, as fsck finds it. The seal binds whether a block is the
// file's last (BlockIO.AdditionalData), and only the last may be short: a file cut
// short on a block boundary ends in a block that opens only as an ordinary one, and
// a cut that leaves less than a block's seal leaves a backing size no whole file
// has. Both are certain cuts. A short last block that does not open at all is a cut
// inside a block (its tag went with the rest) or damage in place: nothing stored
// tells the two apart, so fsck names both.
import DataProtection

enum FileEnd: Equatable {
    /// Ends in a block sealed as the last, or in one that is damaged (counted with the
    /// damaged blocks).
    case whole
    /// Cut short: the stored plaintext ends after `after` bytes.
    case cut(after: Int)
    /// The short last block `block` does not open: cut inside it, or damaged; the
    /// blocks before it hold `after` bytes.
    case cutOrDamaged(block: Int, after: Int)

    /// `endsInOrdinaryBlock`: the last block opened only as an ordinary one.
    /// `lastBlockOpens`: the last block opened (as the last or an ordinary one).
    init(backingSize: Int, plainSize: Int, endsInOrdinaryBlock: Bool, lastBlockOpens: Bool) {
        let last = BlockLayout.lastBlock(plainSize: plainSize)
        if !BlockLayout.isWholeBacking(backingSize) || endsInOrdinaryBlock {
            self = .cut(after: plainSize)
        } else if plainSize > 0, !lastBlockOpens,
                  BlockLayout.plainLength(ofBlock: last, plainSize: plainSize) < BlockLayout.plainBlockSize {
            self = .cutOrDamaged(block: last, after: last * BlockLayout.plainBlockSize)
        } else {
            self = .whole
        }
    }

    /// The block this finding accounts for, left out of the damaged blocks' list.
    var unopenedBlock: Int? {
        if case .cutOrDamaged(let block, _) = self { return block }
        return nil
    }

    /// What fsck prints; with `salvaged`, what the salvaged copy holds.
    func problem(salvaged: Bool) -> String? {
        switch self {
        case .whole:
            return nil
        case .cut(let after):
            return "cut short after \(after) bytes: the rest is lost"
                + (salvaged ? "; the salvaged copy holds those \(after) bytes, short of the original" : "")
        case .cutOrDamaged(let block, let after):
            return "its last block (\(block)) does not open: cut short inside it after \(after) bytes, the rest lost, "
                + "or that block is damaged"
                + (salvaged ? "; the salvaged copy holds the \(after) bytes before it, then zeros, and may be short of the original" : "")
        }
    }
}
