extension Duration {
    /// This duration in seconds.
    public var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) * 1e-18
    }
}
