// An ordinary permanent key from SecKeyCreateRandomKey: made in the app, as iOS makes
// a software key in the app's process, then stored with the add SecItemAdd makes for
// kSecValueRef. Its private form crosses the socket once, as the item's data in the
// request's secret section, and never comes back.
import DPFSProtocol
import Foundation

enum PermanentKeyItem {
    /// Stores `key` under the spec's attributes and the call's authentication; the
    /// item's attributes as the store keeps them, or the store's refusal.
    static func add(_ key: SecKey, _ spec: KeySpec) throws -> [String: String] {
        var attributes = spec.storeAttributes
        let data = try KeyItemAttributes.forAdding(key, &attributes)
        var request = KeychainRequest(operation: .add, attributes: attributes, data: data, returning: "attributes")
        request.authentication = spec.authentication?.request
        let response: KeychainResponse
        switch DeviceConnection.shared.send(request) {
        case .answered(let answer): response = answer
        case .unreachable: throw SecKeyFailure(errSecNotAvailable, "no dpfs device answers (is DPFS_MOUNT set?)")
        case .tooLarge: throw SecKeyFailure(errSecParam, "the key item is larger than a request to the device may be")
        }
        guard response.status == errSecSuccess else {
            throw SecKeyFailure(response.status, response.message ?? "the device could not store the key")
        }
        return response.items.first?.attributes ?? [:]
    }
}
