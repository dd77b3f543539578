// The length-prefixed lists that seals bind and hashes cover are stored formats
// (dpfs(5)): the same fields must give the same bytes however the list is built.
import DataProtection
import Foundation
import Testing
@testable import ItemStore

@Suite struct FieldEncodingTests {
    @Test func eachFieldFollowsItsBigEndianLength() {
        #expect(FieldEncoding.lengthPrefixed([[1, 2], [], [3]]) == [0, 0, 0, 2, 1, 2, 0, 0, 0, 0, 0, 0, 0, 1, 3])
    }

    @Test func aListBuiltFromStringsDataAndArraysIsTheSameBytes() {
        var list = FieldList()
        list.append("dpfs")
        list.append(Data([0xff, 0]))
        list.append([UInt8]())
        list.append(String(repeating: "é", count: 200))
        let expected = FieldEncoding.lengthPrefixed([Array("dpfs".utf8), [0xff, 0], [],
                                                     Array(String(repeating: "é", count: 200).utf8)])
        #expect(list.bytes == expected)
        #expect(Array(list.bytes[18..<22]) == [0, 0, 1, 144], "400 bytes of UTF-8")
        #expect(list.bytes.withUnsafeBytes { FieldEncoding.fields($0) }?.count == 4)
    }

    @Test func aSecretListInLockedMemoryIsTheSameBytes() {
        let (token, empty, key) = (Array("token".utf8), [UInt8](), [UInt8](repeating: 0xab, count: 300))
        let secret = token.withUnsafeBytes { token in
            empty.withUnsafeBytes { empty in key.withUnsafeBytes { key in FieldList.secret([token, empty, key]) } }
        }
        #expect(Array(secret.bytes) == FieldEncoding.lengthPrefixed([token, empty, key]))
    }
}
