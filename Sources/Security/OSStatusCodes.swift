// OSStatus and the errSec codes a keychain call answers, with Apple's numbers (one
// definition, the protocol's SecStatus). SecCopyErrorMessageString is in
// SecErrorMessages.swift.
import DPFSProtocol
import Foundation

public typealias OSStatus = Int32

public let noErr: OSStatus = 0
public let errSecSuccess: OSStatus = SecStatus.success
public let errSecUnimplemented: OSStatus = -4
public let errSecIO: OSStatus = SecStatus.io
public let errSecParam: OSStatus = SecStatus.param
public let errSecNotAvailable: OSStatus = SecStatus.notAvailable
public let errSecAuthFailed: OSStatus = SecStatus.authFailed
public let errSecDuplicateItem: OSStatus = SecStatus.duplicateItem
public let errSecItemNotFound: OSStatus = SecStatus.itemNotFound
public let errSecInteractionNotAllowed: OSStatus = SecStatus.interactionNotAllowed
public let errSecDecode: OSStatus = SecStatus.decode
public let errSecMissingEntitlement: OSStatus = SecStatus.missingEntitlement
public let errSecInvalidEncoding: OSStatus = -67853
// Apple's other codes (SecBase.h), for code that compares against them; this keychain
// answers only those above.
public let errSecDiskFull: OSStatus = -34
public let errSecWrPerm: OSStatus = -61
public let errSecAllocate: OSStatus = -108
public let errSecUserCanceled: OSStatus = -128
public let errSecBadReq: OSStatus = -909
public let errSecInternalComponent: OSStatus = -2070
public let errSecReadOnly: OSStatus = -25292
public let errSecNoSuchKeychain: OSStatus = -25294
public let errSecInvalidKeychain: OSStatus = -25295
public let errSecBufferTooSmall: OSStatus = -25301
public let errSecDataTooLarge: OSStatus = -25302
public let errSecNoSuchAttr: OSStatus = -25303
public let errSecInvalidItemRef: OSStatus = -25304
public let errSecNoSuchClass: OSStatus = -25306
public let errSecNoDefaultKeychain: OSStatus = -25307
public let errSecReadOnlyAttr: OSStatus = -25309
public let errSecInteractionRequired: OSStatus = -25315
public let errSecDataNotAvailable: OSStatus = -25316
public let errSecDataNotModifiable: OSStatus = -25317
public let errSecInvalidRecord: OSStatus = -67701
