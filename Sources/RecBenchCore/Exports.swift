// RecBenchCore is the product's library: its layers are targets of their own (the compiler
// keeps each to the ones before it), re-exported here with Linalg (whose `Compute` and `Matrix` the contract's
// signatures use) so a user imports one module.
@_exported import Linalg
@_exported import RecBenchSupport
@_exported import RecBenchData
@_exported import RecBenchContract
@_exported import RecBenchEvaluation
@_exported import RecBenchModels
@_exported import RecBenchRuns
