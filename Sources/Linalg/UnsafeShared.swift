/// Wraps a value that is shared across threads under a discipline the compiler cannot check
/// (for example a pointer whose rows are written by disjoint workers). The one place the core
/// opts out of Sendable checking; every use must say why it is safe.
public struct UnsafeShared<Value>: @unchecked Sendable {
    /// The wrapped value.
    public let value: Value
    /// Wraps `value`.
    public init(_ value: Value) { self.value = value }
}
