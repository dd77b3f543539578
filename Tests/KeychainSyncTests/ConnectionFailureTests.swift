// A connection that fails says why: a server that answered and refused (no such
// database, a login it does not take) and an address libpq cannot use are not "an
// unreachable server", and none of these lines holds the password.
@testable import KeychainSync
import Testing

@Suite struct ConnectionFailureTests {
    static let password = "LeakMe123"

    @Test func aNonNumericPortIsAMalformedAddress() throws {
        let server = try ConnectionString("postgresql://dpfs:\(Self.password)@127.0.0.1:abc/sync")
        do {
            _ = try PostgresConnection(server: server)
            Issue.record("connected to port abc")
        } catch let error as SyncError {
            #expect(error.description.hasPrefix("the sync server's address is malformed:"), "\(error)")
            #expect(!error.description.contains("unreachable") && !error.description.contains(Self.password))
        }
    }

    @Test func libpqsWordsAreSorted() {
        let at = "connection to server at \"127.0.0.1\", port 5432 failed: "
        #expect(SyncError.connectionFailed(at + "FATAL:  database \"nosuchdb\" does not exist").description
            == "the sync server's database does not exist: \(at)FATAL:  database \"nosuchdb\" does not exist")
        #expect(SyncError.connectionFailed(at + "FATAL:  password authentication failed for user \"dpfs\"").description
            .hasPrefix("the sync server refused the login:"))
        #expect(SyncError.connectionFailed(at + "fe_sendauth: no password supplied").description
            .hasPrefix("the sync server refused the login:"))
        #expect(SyncError.connectionFailed(at + "FATAL:  sorry, too many clients already").description
            .hasPrefix("the sync server refused the connection:"))
        let refused = SyncError.connectionFailed(at + "Connection refused")
        #expect(refused.description.hasPrefix("the sync server is unreachable:") && !refused.isRefusal)
        #expect(SyncError.connectionFailed(at + "FATAL:  database \"x\" does not exist").isUnreachable,
                "retried with backoff all the same")
    }
}
