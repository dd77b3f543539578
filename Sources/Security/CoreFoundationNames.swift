// The Core Foundation names that Apple-platform keychain code spells, as Swift types
// of swift-corelibs-foundation. With these aliases `query as CFDictionary`,
// `kSecClass as String`, `var result: CFTypeRef?` and `result as? Data` type-check
// exactly as they do against Apple's Security framework; there is no CF runtime here.
import Foundation

public typealias CFTypeRef = AnyObject
public typealias CFString = String
public typealias CFDictionary = [String: Any]
public typealias CFMutableDictionary = [String: Any]
public typealias CFArray = [Any]
public typealias CFData = Data
public typealias CFDate = Date
public typealias CFNumber = NSNumber
/// Apple's CFBoolean is a class of its own; NSNumber answers `as? Bool` the same way.
public typealias CFBoolean = NSNumber

public typealias CFIndex = Int
public typealias CFOptionFlags = UInt
/// MacTypes' four-character code, the type of kSecAttrCreator and kSecAttrType.
public typealias FourCharCode = UInt32
/// There are no allocators here: code passes kCFAllocatorDefault (nil), as it may on Apple's.
public typealias CFAllocator = AnyObject
public var kCFAllocatorDefault: CFAllocator? { nil }

/// The Info.plist key keychain wrappers read their default service from
/// (`Bundle.main.infoDictionary?[kCFBundleIdentifierKey as String]`).
public let kCFBundleIdentifierKey: CFString = "CFBundleIdentifier"

/// Implicitly unwrapped, as Apple declares them, so `kCFBooleanTrue!` compiles too.
public let kCFBooleanTrue: CFBoolean! = NSNumber(value: true)
public let kCFBooleanFalse: CFBoolean! = NSNumber(value: false)
