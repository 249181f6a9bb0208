//! Large results spill to `.lazyboy-output/`. (Stub: being written.)
