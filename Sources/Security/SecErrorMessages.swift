// SecCopyErrorMessageString: Apple's sentence for each status this library defines,
// word for word. Apple's strings table is generated from the comments of SecBase.h,
// and a status it has no sentence for reads "OSStatus <n>", as Apple's does: code
// that shows or compares these strings sees what it sees on iOS.
import Foundation

/// Apple's message for `status`; `reserved` must be nil.
public func SecCopyErrorMessageString(_ status: OSStatus, _ reserved: UnsafeMutableRawPointer?) -> CFString? {
    SecErrorMessages.apple[status] ?? "OSStatus \(status)"
}

enum SecErrorMessages {
    static let apple: [OSStatus: String] = [
        errSecSuccess: "No error.",
        errSecUnimplemented: "Function or operation not implemented.",
        errSecDiskFull: "The disk is full.",
        errSecIO: "I/O error.",
        errSecParam: "One or more parameters passed to a function were not valid.",
        errSecWrPerm: "Write permissions error.",
        errSecAllocate: "Failed to allocate memory.",
        errSecUserCanceled: "User canceled the operation.",
        errSecBadReq: "Bad parameter or invalid state for operation.",
        errSecMissingEntitlement: "A required entitlement isn't present.",
        errSecNotAvailable: "No keychain is available. You may need to restart your computer.",
        errSecReadOnly: "This keychain cannot be modified.",
        errSecAuthFailed: "The user name or passphrase you entered is not correct.",
        errSecNoSuchKeychain: "The specified keychain could not be found.",
        errSecInvalidKeychain: "The specified keychain is not a valid keychain file.",
        errSecDuplicateItem: "The specified item already exists in the keychain.",
        errSecItemNotFound: "The specified item could not be found in the keychain.",
        errSecBufferTooSmall: "There is not enough memory available to use the specified item.",
        errSecDataTooLarge: "This item contains information which is too large or in a format that cannot be displayed.",
        errSecNoSuchAttr: "The specified attribute does not exist.",
        errSecInvalidItemRef: "The specified item is no longer valid. It may have been deleted from the keychain.",
        errSecNoSuchClass: "The specified item does not appear to be a valid keychain item.",
        errSecNoDefaultKeychain: "A default keychain could not be found.",
        errSecInteractionNotAllowed: "User interaction is not allowed.",
        errSecReadOnlyAttr: "The specified attribute could not be modified.",
        errSecInteractionRequired: "User interaction is required, but is currently not allowed.",
        errSecDataNotAvailable: "The contents of this item cannot be retrieved.",
        errSecDataNotModifiable: "The contents of this item cannot be modified.",
        errSecDecode: "Unable to decode the provided data.",
        errSecVerifyFailed: "A cryptographic verification failure has occurred.",
        errSecInvalidEncoding: "The encoding was not valid.",
        errSecInvalidRecord: "An invalid record was encountered.",
        errSSLCrypto: "underlying cryptographic error",
    ]
}
