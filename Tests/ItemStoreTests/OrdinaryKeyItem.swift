// An ordinary key as an app makes one: the key pair made in-process, the private
// key stored as a key item with the attributes SecItemAdd (kSecValueRef) sends.
import Crypto
import DPFSProtocol
import Foundation
import SecKeyCrypto
@testable import ItemStore

struct OrdinaryKeyItem {
    let response: KeychainResponse
    /// X9.63, uncompressed (65 bytes).
    let publicKey: Data
    var status: Int32 { response.status }
}

extension TestDevice {
    /// `attributes` in the store's names ("applicationTag" in hex, "accessible", …).
    @discardableResult
    func addOrdinaryKey(_ attributes: [String: String], app: String? = nil) -> OrdinaryKeyItem {
        let key = P256.Signing.PrivateKey()
        let publicKey = key.publicKey.x963Representation
        var item = attributes
        item["class"] = ItemClass.keys.rawValue
        item["keyClass"] = "private"
        item["keyType"] = "ec"
        item["keySizeInBits"] = "256"
        item["publicKey"] = publicKey.hexString
        item["applicationLabel"] = KeyEncoding.applicationLabel(ofPublicKey: publicKey).hexString
        let response = store.perform(KeychainRequest(operation: .add, app: app, attributes: item,
                                                     data: KeyEncoding.x963(key), returning: "attributes"))
        return OrdinaryKeyItem(response: response, publicKey: publicKey)
    }
}
