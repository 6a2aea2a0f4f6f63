//! TEMPORARY STUB for type-checking; replaced by the real codec.
#![allow(missing_docs, dead_code)]
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
#[derive(Debug, thiserror::Error)]
#[error("codec")]
pub struct CodecError;
#[derive(Clone, Copy, Debug)]
pub struct CsvOptions {
    pub delimiter: u8,
    pub has_header: bool,
}
pub struct Decoded {
    pub batch: Option<RecordBatch>,
    pub rejected: Vec<Rejected>,
}
pub struct Rejected {
    pub source: String,
    pub line: u64,
    pub reason: String,
    pub record: String,
}
pub struct CsvDecoder;
impl CsvDecoder {
    pub fn new(_s: SchemaRef, _o: CsvOptions) -> Self {
        Self
    }
    pub fn start_file(&mut self, _s: &str) {}
    pub fn decode(&mut self, _b: &[u8]) -> Result<Decoded, CodecError> {
        Err(CodecError)
    }
    pub fn finish_file(&mut self) -> Result<Decoded, CodecError> {
        Err(CodecError)
    }
}
pub struct JsonDecoder;
impl JsonDecoder {
    pub fn new(_s: SchemaRef) -> Self {
        Self
    }
    pub fn start_file(&mut self, _s: &str) {}
    pub fn decode(&mut self, _b: &[u8]) -> Result<Decoded, CodecError> {
        Err(CodecError)
    }
    pub fn finish_file(&mut self) -> Result<Decoded, CodecError> {
        Err(CodecError)
    }
}
#[derive(Clone, Copy, Debug)]
pub enum TimestampFormat {
    EpochMillis,
    Rfc3339,
}
pub struct CsvEncoder;
impl CsvEncoder {
    pub fn new(_d: u8, _h: bool, _t: TimestampFormat) -> Self {
        Self
    }
    pub fn encode(&mut self, _b: &RecordBatch, _o: &mut Vec<u8>) {}
}
pub struct JsonLinesEncoder;
impl JsonLinesEncoder {
    pub fn new(_t: TimestampFormat) -> Self {
        Self
    }
    pub fn encode(&mut self, _b: &RecordBatch, _o: &mut Vec<u8>) {}
}
