// The server's connection string as libpq reads it (libpq5 must be installed, as for
// keychain sync itself): a malformed one is refused without being repeated, and
// libpq's words at a failed connection carry no password.
import Foundation
import Testing
@testable import KeychainSync

@Suite struct ConnectionStringTests {
    private let password = "LeakMe123"

    @Test(arguments: [
        "postgresql://dpfs:LeakMe123@[]/sync",
        "postgresql://dpfs:LeakMe123@[::1]x/sync",
        "postgres://dpfs:LeakMe123@host/sync?password=LeakMe123&nosuchoption=1",
        "host=127.0.0.1 password='LeakMe123",
        "host=127.0.0.1 password=LeakMe123 nosuchoption=1",
        "LeakMe123",
        "",
    ])
    func aMalformedStringIsRefusedWithoutRepeatingIt(_ text: String) {
        do {
            _ = try ConnectionString(text)
            Issue.record("accepted \(text)")
        } catch {
            let message = "\(error)"
            #expect(message.contains("not a connection string libpq can read"))
            #expect(!message.contains(password))
            #expect(!message.contains("unreachable"))
        }
    }

    @Test func redactionStrikesTheStringAndItsSecrets() throws {
        let text = "host=127.0.0.1 password=LeakMe123 sslpassword=KeyPass99"
        let server = try ConnectionString(text)
        #expect(server.redacting("a \(text) b") == "a *** b")
        #expect(server.redacting("said LeakMe123 and KeyPass99") == "said *** and ***")
    }

    @Test func aFailedConnectionNamesNoPassword() throws {
        // Port 1 on the loopback: refused at once, nothing listens there.
        let server = try ConnectionString("postgresql://dpfs:LeakMe123@127.0.0.1:1/sync")
        do {
            _ = try PostgresConnection(server: server)
            Issue.record("connected to port 1")
        } catch let error as SyncError {
            #expect(error.isUnreachable)
            #expect(!error.description.contains(password))
        }
    }
}
