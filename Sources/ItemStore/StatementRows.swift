// The rows of a find's SELECT, read through SQLite's C API from a statement GRDB
// prepared and caches. GRDB's own row cursor binds arguments through generic
// existentials and copies every row into a Row object; for the one indexed lookup
// of a keychain call those costs were larger than SQLite's.
import Foundation
import GRDB
import GRDBSQLite

/// A value bound to one `?` of a statement.
enum SQLArgument {
    case blob(Data)
    case text(String)
    case integer(Int64)

    var databaseValue: DatabaseValue {
        switch self {
        case .blob(let data): data.databaseValue
        case .text(let text): text.databaseValue
        case .integer(let value): value.databaseValue
        }
    }
}

/// Reads a column of the current row, by position.
protocol ColumnReader {
    func integer(at index: Int) throws -> Int64
    func text(at index: Int) throws -> String
    func blob(at index: Int) throws -> Data
    /// nil for NULL.
    func optionalBlob(at index: Int) throws -> Data?
    var columnCount: Int { get }
}

/// A column that is NULL or of another type than its reader asks: a damaged row.
struct ColumnMismatch: Error {}

/// One pass over a cached statement's rows. `finish` resets the statement (ending its
/// read transaction); `rows` calls it, so no caller holds one open.
struct StatementRows: ColumnReader {
    private let statement: SQLiteStatement
    /// GRDB's statement, for its SQL in an error (GRDB builds that text on each ask).
    private let prepared: Statement

    /// Runs `body` over the rows of `statement` with `arguments` bound, in order,
    /// until it returns false or the rows end.
    static func rows(of statement: Statement, _ arguments: [SQLArgument],
                     _ body: (StatementRows) throws -> Bool) throws {
        let rows = StatementRows(statement: statement.sqliteStatement, prepared: statement)
        defer { sqlite3_reset(rows.statement); sqlite3_clear_bindings(rows.statement) }
        try rows.bind(arguments)
        while try rows.step(), try body(rows) {}
    }

    private func bind(_ arguments: [SQLArgument]) throws {
        sqlite3_reset(statement)
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch argument {
            case .blob(let data):
                code = data.withUnsafeBytes { bytes in
                    guard let start = bytes.baseAddress else { return sqlite3_bind_zeroblob(statement, index, 0) }
                    return sqlite3_bind_blob(statement, index, start, Int32(bytes.count), Self.transient)
                }
            case .text(let text):
                code = sqlite3_bind_text(statement, index, text, -1, Self.transient)
            case .integer(let value):
                code = sqlite3_bind_int64(statement, index, value)
            }
            guard code == SQLITE_OK else { throw failure(code) }
        }
    }

    /// SQLITE_TRANSIENT: SQLite copies the bytes, which live only for the bind call.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private func step() throws -> Bool {
        switch sqlite3_step(statement) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw failure(code)
        }
    }

    private func failure(_ code: Int32) -> DatabaseError {
        let connection = sqlite3_db_handle(statement)
        return DatabaseError(resultCode: ResultCode(rawValue: code),
                             message: connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }, sql: prepared.sql)
    }

    var columnCount: Int { Int(sqlite3_column_count(statement)) }

    private func type(at index: Int) -> Int32 { sqlite3_column_type(statement, Int32(index)) }

    func integer(at index: Int) throws -> Int64 {
        guard type(at: index) == SQLITE_INTEGER else { throw ColumnMismatch() }
        return sqlite3_column_int64(statement, Int32(index))
    }

    func text(at index: Int) throws -> String {
        guard type(at: index) == SQLITE_TEXT, let text = sqlite3_column_text(statement, Int32(index)) else {
            throw ColumnMismatch()
        }
        return String(cString: text)
    }

    func blob(at index: Int) throws -> Data {
        guard let data = try optionalBlob(at: index) else { throw ColumnMismatch() }
        return data
    }

    func optionalBlob(at index: Int) throws -> Data? {
        switch type(at: index) {
        case SQLITE_NULL: return nil
        case SQLITE_BLOB:
            let count = Int(sqlite3_column_bytes(statement, Int32(index)))
            guard count > 0, let bytes = sqlite3_column_blob(statement, Int32(index)) else { return Data() }
            return Data(bytes: bytes, count: count)
        default: throw ColumnMismatch()
        }
    }
}

/// GRDB's rows, read the same way, for the calls that fetch them through GRDB.
extension Row: ColumnReader {
    func integer(at index: Int) throws -> Int64 {
        guard let value = Int64.fromDatabaseValue(self[index] as DatabaseValue) else { throw ColumnMismatch() }
        return value
    }

    func text(at index: Int) throws -> String {
        guard case .string(let text) = (self[index] as DatabaseValue).storage else { throw ColumnMismatch() }
        return text
    }

    func blob(at index: Int) throws -> Data {
        guard let data = try optionalBlob(at: index) else { throw ColumnMismatch() }
        return data
    }

    func optionalBlob(at index: Int) throws -> Data? {
        switch (self[index] as DatabaseValue).storage {
        case .null: return nil
        case .blob(let data): return data
        default: throw ColumnMismatch()
        }
    }

    var columnCount: Int { count }
}
