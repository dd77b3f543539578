import DataProtection
import XCTest

final class NameBindingTests: XCTestCase {
    let cipher = NameCipher(deviceSecret: SecureBuffer.random(count: 32))
    let key = SecureBuffer.random(count: 32)
    let directory = Sodium.randomBytes(16)
    let fileID = Sodium.randomBytes(16)

    func place(_ name: String, in directory: [UInt8]? = nil) -> NamePlace {
        cipher.seal(Array(name.utf8), directoryID: directory ?? self.directory).place
    }

    func testPlaceIsTheNameInItsDirectory() {
        let sealed = cipher.seal(Array("a.txt".utf8), directoryID: directory)
        XCTAssertEqual(cipher.openPlaced(sealed.stored, directoryID: directory)?.place, sealed.place, "listing finds the place lookup made")
        XCTAssertNotEqual(place("a.txt"), place("b.txt"))
        XCTAssertNotEqual(place("a.txt"), place("a.txt", in: Sodium.randomBytes(16)))
    }

    func testTagsListOnlyTheirOwnNodeAndNames() {
        let tags = [NameBinding.tag(identity: fileID, place: place("a.txt"), metadataKey: key)]
        XCTAssertTrue(NameBinding.lists(tags, identity: fileID, place: place("a.txt"), metadataKey: key))
        XCTAssertFalse(NameBinding.lists(tags, identity: fileID, place: place("b.txt"), metadataKey: key), "another name")
        XCTAssertFalse(NameBinding.lists(tags, identity: Sodium.randomBytes(16), place: place("a.txt"), metadataKey: key),
                       "another node carrying these tags")
        XCTAssertFalse(NameBinding.lists(tags, identity: fileID, place: place("a.txt"), metadataKey: SecureBuffer.random(count: 32)),
                       "tags made without this device's key")
        XCTAssertFalse(NameBinding.lists([], identity: fileID, place: place("a.txt"), metadataKey: key), "no tags")
    }

    func testUpdatedAddsOnceRemovesAndStopsAtTheLimit() throws {
        var tags = try XCTUnwrap(NameBinding.updated([], identity: fileID, adding: place("a"), removing: nil, metadataKey: key))
        tags = try XCTUnwrap(NameBinding.updated(tags, identity: fileID, adding: place("a"), removing: nil, metadataKey: key))
        XCTAssertEqual(tags.count, 1, "a name is tagged once")
        tags = try XCTUnwrap(NameBinding.updated(tags, identity: fileID, adding: place("b"), removing: place("a"), metadataKey: key))
        XCTAssertEqual(tags.count, 1)
        XCTAssertTrue(NameBinding.lists(tags, identity: fileID, place: place("b"), metadataKey: key))
        XCTAssertFalse(NameBinding.lists(tags, identity: fileID, place: place("a"), metadataKey: key))
        for index in 1..<NameBinding.maxNames {
            tags = try XCTUnwrap(NameBinding.updated(tags, identity: fileID, adding: place("n\(index)"), removing: nil, metadataKey: key))
        }
        XCTAssertEqual(tags.count, NameBinding.maxNames)
        XCTAssertNil(NameBinding.updated(tags, identity: fileID, adding: place("one too many"), removing: nil, metadataKey: key))
    }

    func testDecodeTakesWholeTagsOnly() {
        let tags = [NameBinding.tag(identity: fileID, place: place("a"), metadataKey: key)]
        XCTAssertEqual(NameBinding.decode(NameBinding.encode(tags)), tags)
        XCTAssertNil(NameBinding.decode(NameBinding.encode(tags) + [0]), "a cut or padded value is damage")
        XCTAssertEqual(NameBinding.decode([UInt8]())?.count, 0)
    }
}
