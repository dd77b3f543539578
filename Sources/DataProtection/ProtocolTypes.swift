// DataProtection speaks the protocol's vocabulary (ProtectionClass, DeviceStatus,
// DeviceEvent) in its own API; its users get those types with it.
@_exported import DPFSProtocol
