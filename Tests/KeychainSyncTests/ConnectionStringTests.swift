// The server's connection string as libpq reads it (libpq5 must be installed, as for
// keychain sync itself): a malformed one is refused without being repeated, every
// password form is left out of the shown form, which libpq reads back the same, and
// libpq's words at a failed connection carry no password.
import Foundation
import Testing
@testable import KeychainSync

@Suite struct ConnectionStringTests {
    private let password = "LeakMe123"

    /// The options libpq reads from `text`, secrets left out.
    private func shownOptions(_ text: String) throws -> [ConnectionString.Option] {
        try ConnectionString(text).options.filter { !$0.secret }
    }

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

    @Test(arguments: [
        ("postgresql://dpfs:LeakMe123@127.0.0.1:5432/sync", "postgresql://dpfs@127.0.0.1:5432/sync"),
        ("postgresql://dpfs@h/sync?password=LeakMe123", "postgresql://dpfs@h/sync"),
        ("host=127.0.0.1 port=5432 user=dpfs password=LeakMe123 dbname=sync",
         "user=dpfs dbname=sync host=127.0.0.1 port=5432"),
        ("postgres://dpfs@h/sync?sslpassword=LeakMe123&sslmode=require", "postgres://dpfs@h/sync?sslmode=require"),
    ])
    func everyPasswordFormIsLeftOut(_ text: String, _ shown: String) throws {
        let displayed = try ConnectionString(text).displayed
        #expect(displayed == shown)
        #expect(!displayed.contains(password))
        #expect(try shownOptions(displayed) == shownOptions(text))
    }

    @Test(arguments: [
        "postgresql://a%20b@h1:1,[::1]:2,%2Ftmp/d%2Fb?application_name=x%20y&connect_timeout=5",
        "postgresql:///sync?host=/run/postgresql",
        "postgresql://h1,h2/d",
        "host='a b' user='it\\'s' dbname='back\\\\slash' port=1",
    ])
    func theShownFormReadsBackTheSame(_ text: String) throws {
        let displayed = try ConnectionString(text).displayed
        #expect(try shownOptions(displayed) == shownOptions(text))
    }

    @Test func statusShowsNoPassword() {
        #expect(SyncEngine.displayed("postgresql://u:pw@h:5432/db") == "postgresql://u@h:5432/db")
        #expect(SyncEngine.displayed("host=h password=pw dbname=d") == "dbname=d host=h")
        #expect(SyncEngine.displayed("postgresql://u@h/db?password=pw") == "postgresql://u@h/db")
        #expect(!SyncEngine.displayed("postgresql://u:\(password)@[]/db").contains(password))
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
