// What a pull reads, a page at a time: the records above a sequence, in the order of
// their sequences, at most `limit` of them, so a device that joins a large account
// (or comes back after a long absence) holds one page of payloads at once, not every
// record changed since it last looked. The server's source; tests give their own.

/// A record as a pull reads it: `payload` nil when its `size` is above any record's
/// (it was not fetched).
struct PulledRecord {
    let recordID: String
    let epoch: Int
    let sequence: Int
    let size: Int
    let payload: [UInt8]?
}

protocol PulledRecordSource {
    /// The records with a sequence above `sequence`, in order, at most `limit`.
    func records(after sequence: Int, limit: Int) throws -> [PulledRecord]
}

/// The account's records on the server.
struct ServerRecords: PulledRecordSource {
    let connection: PostgresConnection
    let accountID: String

    func records(after sequence: Int, limit: Int) throws -> [PulledRecord] {
        // The payload's size first: one above any record's is not fetched at all.
        let rows = try connection.execute("""
            SELECT record_id, epoch, seq, octet_length(payload), CASE WHEN octet_length(payload) <= $3 THEN payload END
            FROM dpfs_sync_records WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $4
            """, [.text(accountID), .int(sequence), .int(RecordPlaintext.maxSealedSize), .int(limit)])
        return try (0..<rows.count).map { row in
            guard let recordID = rows.text(row, 0), let epoch = rows.int(row, 1), let sequence = rows.int(row, 2) else {
                throw SyncError("the sync server answered a record without its id, epoch or sequence")
            }
            return PulledRecord(recordID: recordID, epoch: epoch, sequence: sequence, size: rows.int(row, 3) ?? 0,
                                payload: rows.bytes(row, 4))
        }
    }
}
