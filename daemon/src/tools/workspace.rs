//! Path confinement to the workspace. (Stub: being written.)
