// A socket path longer than sun_path holds is refused, not cut short to another name.
@testable import DPFSProtocol
import Glibc
import Testing

@Suite struct UnixAddressTests {
    @Test func theLongestPathThatFitsIsTaken() {
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        #expect(UnixAddress(path: "/" + String(repeating: "a", count: capacity - 2)) != nil)
    }

    @Test func aLongerPathIsRefused() {
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        #expect(UnixAddress(path: "/" + String(repeating: "a", count: capacity - 1)) == nil)
    }

    @Test func aPathWithANulIsRefused() {
        #expect(UnixAddress(path: "/tmp/a\u{0}b") == nil)
    }
}
