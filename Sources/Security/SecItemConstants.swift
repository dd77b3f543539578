// The kSec keys and values of the item store, each with the string Apple's Security
// framework gives it (its open-source SecItemConstants), so that apps and their tests
// that compare against those strings, or read returned dictionaries by them, agree.

// Item class
public let kSecClass: CFString = "class"
public let kSecClassGenericPassword: CFString = "genp"
public let kSecClassInternetPassword: CFString = "inet"
/// Apple's other classes exist so code naming them compiles; calls on them answer errSecUnimplemented.
public let kSecClassCertificate: CFString = "cert"
public let kSecClassKey: CFString = "keys"
public let kSecClassIdentity: CFString = "idnt"

// Attributes
public let kSecAttrService: CFString = "svce"
public let kSecAttrAccount: CFString = "acct"
public let kSecAttrServer: CFString = "srvr"
public let kSecAttrProtocol: CFString = "ptcl"
public let kSecAttrPort: CFString = "port"
public let kSecAttrPath: CFString = "path"
public let kSecAttrSecurityDomain: CFString = "sdmn"
public let kSecAttrAuthenticationType: CFString = "atyp"
public let kSecAttrLabel: CFString = "labl"
public let kSecAttrAccessGroup: CFString = "agrp"
public let kSecAttrSynchronizable: CFString = "sync"
public let kSecAttrSynchronizableAny: CFString = "syna"
public let kSecAttrCreationDate: CFString = "cdat"
public let kSecAttrModificationDate: CFString = "mdat"
public let kSecAttrDescription: CFString = "desc"
public let kSecAttrComment: CFString = "icmt"
public let kSecAttrGeneric: CFString = "gena"
public let kSecAttrCreator: CFString = "crtr"
public let kSecAttrType: CFString = "type"
public let kSecAttrIsInvisible: CFString = "invi"
public let kSecAttrIsNegative: CFString = "nega"
/// Part of an item's identity on iOS; no item here has one (SecItemMatch.swift).
public let kSecAttrSyncViewHint: CFString = "vwht"
/// A key of returned attributes on iOS, never of a query (errSecParam there, as on iOS).
public let kSecAttrPersistentReference: CFString = "persistref"
/// Apple's misspelt twin of kSecAttrPersistentReference, with the same string.
public let kSecAttrPersistantReference: CFString = "persistref"
/// The kSecAttrAccessGroup value of items a smart card provides; this keychain has none.
public let kSecAttrAccessGroupToken: CFString = "com.apple.token"

// Attributes of certificates (and identities), named so code compiles; a password or
// key query naming one is errSecNoSuchAttr, as on iOS.
public let kSecAttrSubject: CFString = "subj"
public let kSecAttrIssuer: CFString = "issr"
public let kSecAttrSerialNumber: CFString = "slnr"
public let kSecAttrSubjectKeyID: CFString = "skid"
public let kSecAttrPublicKeyHash: CFString = "pkhh"
public let kSecAttrCertificateType: CFString = "ctyp"
public let kSecAttrCertificateEncoding: CFString = "cenc"

// Accessibility
public let kSecAttrAccessible: CFString = "pdmn"
public let kSecAttrAccessibleWhenUnlocked: CFString = "ak"
public let kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
public let kSecAttrAccessibleAlways: CFString = "dk"
public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku"
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku"
public let kSecAttrAccessibleAlwaysThisDeviceOnly: CFString = "dku"
public let kSecAttrAccessibleWhenPasscodeSetThisDeviceOnly: CFString = "akpu"

// Values, results, match limits
public let kSecValueData: CFString = "v_Data"
public let kSecValueRef: CFString = "v_Ref"
public let kSecValuePersistentRef: CFString = "v_PersistentRef"
public let kSecReturnData: CFString = "r_Data"
public let kSecReturnAttributes: CFString = "r_Attributes"
public let kSecReturnRef: CFString = "r_Ref"
public let kSecReturnPersistentRef: CFString = "r_PersistentRef"
public let kSecMatchLimit: CFString = "m_Limit"
public let kSecMatchLimitOne: CFString = "m_LimitOne"
public let kSecMatchLimitAll: CFString = "m_LimitAll"

// The other match keys: what a query with each answers is in SecItemMatch.swift.
public let kSecMatchPolicy: CFString = "m_Policy"
public let kSecMatchItemList: CFString = "m_ItemList"
public let kSecMatchSearchList: CFString = "m_SearchList"
public let kSecMatchIssuers: CFString = "m_Issuers"
public let kSecMatchEmailAddressIfPresent: CFString = "m_EmailAddressIfPresent"
public let kSecMatchSubjectContains: CFString = "m_SubjectContains"
public let kSecMatchHostOrSubdomainOfHost: CFString = "m_HostOrSubdomainOfHost"
public let kSecMatchCaseInsensitive: CFString = "m_CaseInsensitive"
public let kSecMatchTrustedOnly: CFString = "m_TrustedOnly"
public let kSecMatchValidOnDate: CFString = "m_ValidOnDate"

// kSecUse: one keychain (nleg changes nothing); the authentication keys go to the
// device's simulated user (SecAccessControl.swift)
public let kSecUseDataProtectionKeychain: CFString = "nleg"
public let kSecUseAuthenticationUI: CFString = "u_AuthUI"
public let kSecUseAuthenticationUIAllow: CFString = "u_AuthUIA"
public let kSecUseAuthenticationUIFail: CFString = "u_AuthUIF"
public let kSecUseAuthenticationUISkip: CFString = "u_AuthUIS"
public let kSecUseOperationPrompt: CFString = "u_OpPrompt"
/// Not implemented on iOS (deprecated there since iOS 12): a call naming it is errSecParam.
public let kSecUseItemList: CFString = "u_ItemList"

// kSecAttrProtocol values
public let kSecAttrProtocolFTP: CFString = "ftp "
public let kSecAttrProtocolFTPAccount: CFString = "ftpa"
public let kSecAttrProtocolHTTP: CFString = "http"
public let kSecAttrProtocolIRC: CFString = "irc "
public let kSecAttrProtocolNNTP: CFString = "nntp"
public let kSecAttrProtocolPOP3: CFString = "pop3"
public let kSecAttrProtocolSMTP: CFString = "smtp"
public let kSecAttrProtocolSOCKS: CFString = "sox "
public let kSecAttrProtocolIMAP: CFString = "imap"
public let kSecAttrProtocolLDAP: CFString = "ldap"
public let kSecAttrProtocolAppleTalk: CFString = "atlk"
public let kSecAttrProtocolAFP: CFString = "afp "
public let kSecAttrProtocolTelnet: CFString = "teln"
public let kSecAttrProtocolSSH: CFString = "ssh "
public let kSecAttrProtocolFTPS: CFString = "ftps"
public let kSecAttrProtocolHTTPS: CFString = "htps"
public let kSecAttrProtocolHTTPProxy: CFString = "htpx"
public let kSecAttrProtocolHTTPSProxy: CFString = "htsx"
public let kSecAttrProtocolFTPProxy: CFString = "ftpx"
public let kSecAttrProtocolSMB: CFString = "smb "
public let kSecAttrProtocolRTSP: CFString = "rtsp"
public let kSecAttrProtocolRTSPProxy: CFString = "rtsx"
public let kSecAttrProtocolDAAP: CFString = "daap"
public let kSecAttrProtocolEPPC: CFString = "eppc"
public let kSecAttrProtocolIPP: CFString = "ipp "
public let kSecAttrProtocolNNTPS: CFString = "ntps"
public let kSecAttrProtocolLDAPS: CFString = "ldps"
public let kSecAttrProtocolTelnetS: CFString = "tels"
public let kSecAttrProtocolIMAPS: CFString = "imps"
public let kSecAttrProtocolIRCS: CFString = "ircs"
public let kSecAttrProtocolPOP3S: CFString = "pops"

// kSecAttrAuthenticationType values
public let kSecAttrAuthenticationTypeNTLM: CFString = "ntlm"
public let kSecAttrAuthenticationTypeMSN: CFString = "msna"
public let kSecAttrAuthenticationTypeDPA: CFString = "dpaa"
public let kSecAttrAuthenticationTypeRPA: CFString = "rpaa"
public let kSecAttrAuthenticationTypeHTTPBasic: CFString = "http"
public let kSecAttrAuthenticationTypeHTTPDigest: CFString = "httd"
public let kSecAttrAuthenticationTypeHTMLForm: CFString = "form"
public let kSecAttrAuthenticationTypeDefault: CFString = "dflt"
