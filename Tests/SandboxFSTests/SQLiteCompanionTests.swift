// Which new names are an SQLite database's companions (SQLiteCompanions.swift): the
// exact suffixes SQLite appends, after a name of at least one byte.
@testable import SandboxFS
import XCTest

final class SQLiteCompanionTests: XCTestCase {
    private func baseLength(_ name: String) -> Int? {
        name.withCString { SQLiteCompanion.baseLength(of: $0, length: strlen($0)) }
    }

    func testTheThreeSuffixesNameTheirBase() {
        XCTAssertEqual(baseLength("notes.db-wal"), 8)
        XCTAssertEqual(baseLength("notes.db-shm"), 8)
        XCTAssertEqual(baseLength("notes.db-journal"), 8)
        XCTAssertEqual(baseLength("x-wal"), 1)
    }

    func testOtherNamesAreNoCompanions() {
        XCTAssertNil(baseLength("notes.db"))
        XCTAssertNil(baseLength("-wal"), "a suffix alone has no base")
        XCTAssertNil(baseLength("notes.db-WAL"), "SQLite's suffixes are lower case")
        XCTAssertNil(baseLength("notes.db-wal2"))
        XCTAssertNil(baseLength("notes.db.wal"))
        XCTAssertNil(baseLength(".notes.db.swp"))
        XCTAssertNil(baseLength(""))
    }
}
