// The kSec item constants that Apple's Security framework declares for macOS alone
// (unavailable on iOS, whose keychain this is). Declared unavailable, so iOS code
// naming one fails to build here as it does for an iPhone: with "is unavailable"
// rather than "cannot find in scope".

@available(*, unavailable, message: "macOS only: iOS matches no certificate subject this way")
public let kSecMatchSubjectStartsWith: CFString = "m_SubjectStartsWith"
@available(*, unavailable, message: "macOS only: iOS matches no certificate subject this way")
public let kSecMatchSubjectEndsWith: CFString = "m_SubjectEndsWith"
@available(*, unavailable, message: "macOS only: iOS matches no certificate subject this way")
public let kSecMatchSubjectWholeString: CFString = "m_SubjectWholeString"
@available(*, unavailable, message: "macOS only: the iOS keychain compares strings exactly")
public let kSecMatchDiacriticInsensitive: CFString = "m_DiacriticInsensitive"
@available(*, unavailable, message: "macOS only: the iOS keychain compares strings exactly")
public let kSecMatchWidthInsensitive: CFString = "m_WidthInsensitive"
@available(*, unavailable, message: "macOS only: iOS has one keychain")
public let kSecUseKeychain: CFString = "u_Keychain"
@available(*, unavailable, message: "macOS only: the file-based keychain's access object")
public let kSecAttrAccess: CFString = "acls"
