// OSStatus codes of Apple's Security framework, with Apple's numbers and names, so
// that scripts written against SecItem read the same values here.
public enum SecStatus {
    public static let success: Int32 = 0
    public static let io: Int32 = -36
    public static let param: Int32 = -50
    /// Here: a find whose items would not fit in one reply.
    public static let allocate: Int32 = -108
    public static let userCanceled: Int32 = -128
    public static let notAvailable: Int32 = -25291
    public static let authFailed: Int32 = -25293
    public static let duplicateItem: Int32 = -25299
    public static let itemNotFound: Int32 = -25300
    public static let interactionNotAllowed: Int32 = -25308
    public static let decode: Int32 = -26275
    public static let missingEntitlement: Int32 = -34018

    /// Apple's constant name for a status, or "OSStatus" for one this store never returns.
    public static func name(_ status: Int32) -> String {
        switch status {
        case success: return "errSecSuccess"
        case io: return "errSecIO"
        case param: return "errSecParam"
        case allocate: return "errSecAllocate"
        case userCanceled: return "errSecUserCanceled"
        case notAvailable: return "errSecNotAvailable"
        case authFailed: return "errSecAuthFailed"
        case duplicateItem: return "errSecDuplicateItem"
        case itemNotFound: return "errSecItemNotFound"
        case interactionNotAllowed: return "errSecInteractionNotAllowed"
        case decode: return "errSecDecode"
        case missingEntitlement: return "errSecMissingEntitlement"
        default: return "OSStatus"
        }
    }

    /// The one-line form the CLI prints: `errSecItemNotFound (-25300)`.
    public static func describe(_ status: Int32) -> String { "\(name(status)) (\(status))" }
}
