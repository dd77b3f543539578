import Glibc
import Testing

/// A caller's end and a daemon's end of one Unix stream connection.
func connectedPair() throws -> (Int32, Int32) {
    var pair: [Int32] = [-1, -1]
    try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
    return (pair[0], pair[1])
}
