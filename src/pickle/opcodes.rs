//! Pickle opcode bytes (protocols 0–5) and their names for error messages.

pub(crate) const MARK: u8 = b'(';
pub(crate) const STOP: u8 = b'.';
pub(crate) const POP: u8 = b'0';
pub(crate) const POP_MARK: u8 = b'1';
pub(crate) const DUP: u8 = b'2';
pub(crate) const FLOAT: u8 = b'F';
pub(crate) const INT: u8 = b'I';
pub(crate) const BININT: u8 = b'J';
pub(crate) const BININT1: u8 = b'K';
pub(crate) const LONG: u8 = b'L';
pub(crate) const BININT2: u8 = b'M';
pub(crate) const NONE: u8 = b'N';
pub(crate) const PERSID: u8 = b'P';
pub(crate) const BINPERSID: u8 = b'Q';
pub(crate) const REDUCE: u8 = b'R';
pub(crate) const STRING: u8 = b'S';
pub(crate) const BINSTRING: u8 = b'T';
pub(crate) const SHORT_BINSTRING: u8 = b'U';
pub(crate) const UNICODE: u8 = b'V';
pub(crate) const BINUNICODE: u8 = b'X';
pub(crate) const APPEND: u8 = b'a';
pub(crate) const BUILD: u8 = b'b';
pub(crate) const GLOBAL: u8 = b'c';
pub(crate) const DICT: u8 = b'd';
pub(crate) const EMPTY_DICT: u8 = b'}';
pub(crate) const APPENDS: u8 = b'e';
pub(crate) const GET: u8 = b'g';
pub(crate) const BINGET: u8 = b'h';
pub(crate) const INST: u8 = b'i';
pub(crate) const LONG_BINGET: u8 = b'j';
pub(crate) const LIST: u8 = b'l';
pub(crate) const EMPTY_LIST: u8 = b']';
pub(crate) const OBJ: u8 = b'o';
pub(crate) const PUT: u8 = b'p';
pub(crate) const BINPUT: u8 = b'q';
pub(crate) const LONG_BINPUT: u8 = b'r';
pub(crate) const SETITEM: u8 = b's';
pub(crate) const TUPLE: u8 = b't';
pub(crate) const EMPTY_TUPLE: u8 = b')';
pub(crate) const SETITEMS: u8 = b'u';
pub(crate) const BINFLOAT: u8 = b'G';
pub(crate) const PROTO: u8 = 0x80;
pub(crate) const NEWOBJ: u8 = 0x81;
pub(crate) const EXT1: u8 = 0x82;
pub(crate) const EXT2: u8 = 0x83;
pub(crate) const EXT4: u8 = 0x84;
pub(crate) const TUPLE1: u8 = 0x85;
pub(crate) const TUPLE2: u8 = 0x86;
pub(crate) const TUPLE3: u8 = 0x87;
pub(crate) const NEWTRUE: u8 = 0x88;
pub(crate) const NEWFALSE: u8 = 0x89;
pub(crate) const LONG1: u8 = 0x8a;
pub(crate) const LONG4: u8 = 0x8b;
pub(crate) const BINBYTES: u8 = b'B';
pub(crate) const SHORT_BINBYTES: u8 = b'C';
pub(crate) const SHORT_BINUNICODE: u8 = 0x8c;
pub(crate) const BINUNICODE8: u8 = 0x8d;
pub(crate) const BINBYTES8: u8 = 0x8e;
pub(crate) const EMPTY_SET: u8 = 0x8f;
pub(crate) const ADDITEMS: u8 = 0x90;
pub(crate) const FROZENSET: u8 = 0x91;
pub(crate) const NEWOBJ_EX: u8 = 0x92;
pub(crate) const STACK_GLOBAL: u8 = 0x93;
pub(crate) const MEMOIZE: u8 = 0x94;
pub(crate) const FRAME: u8 = 0x95;
pub(crate) const BYTEARRAY8: u8 = 0x96;
pub(crate) const NEXT_BUFFER: u8 = 0x97;
pub(crate) const READONLY_BUFFER: u8 = 0x98;

/// The highest protocol this decoder understands.
pub(crate) const HIGHEST_PROTOCOL: u8 = 5;

/// Opcodes that make `pickle.load` import or call something. Refused.
pub(crate) fn runs_code(op: u8) -> bool {
    matches!(
        op,
        GLOBAL
            | STACK_GLOBAL
            | REDUCE
            | BUILD
            | INST
            | OBJ
            | NEWOBJ
            | NEWOBJ_EX
            | PERSID
            | BINPERSID
            | EXT1
            | EXT2
            | EXT4
    )
}

/// Every byte's opcode name, computed once at compile time.
static NAMES: [Option<&str>; 256] = {
    let mut t = [None; 256];
    let mut byte: u8 = 0;
    loop {
        t[byte as usize] = lookup(byte);
        if byte == u8::MAX {
            break;
        }
        byte += 1;
    }
    t
};

/// The opcode's name as `pickletools` spells it, or `None` if unknown.
#[inline]
pub(crate) fn name(op: u8) -> Option<&'static str> {
    NAMES[op as usize]
}

const fn lookup(op: u8) -> Option<&'static str> {
    Some(match op {
        MARK => "MARK",
        STOP => "STOP",
        POP => "POP",
        POP_MARK => "POP_MARK",
        DUP => "DUP",
        FLOAT => "FLOAT",
        INT => "INT",
        BININT => "BININT",
        BININT1 => "BININT1",
        LONG => "LONG",
        BININT2 => "BININT2",
        NONE => "NONE",
        PERSID => "PERSID",
        BINPERSID => "BINPERSID",
        REDUCE => "REDUCE",
        STRING => "STRING",
        BINSTRING => "BINSTRING",
        SHORT_BINSTRING => "SHORT_BINSTRING",
        UNICODE => "UNICODE",
        BINUNICODE => "BINUNICODE",
        APPEND => "APPEND",
        BUILD => "BUILD",
        GLOBAL => "GLOBAL",
        DICT => "DICT",
        EMPTY_DICT => "EMPTY_DICT",
        APPENDS => "APPENDS",
        GET => "GET",
        BINGET => "BINGET",
        INST => "INST",
        LONG_BINGET => "LONG_BINGET",
        LIST => "LIST",
        EMPTY_LIST => "EMPTY_LIST",
        OBJ => "OBJ",
        PUT => "PUT",
        BINPUT => "BINPUT",
        LONG_BINPUT => "LONG_BINPUT",
        SETITEM => "SETITEM",
        TUPLE => "TUPLE",
        EMPTY_TUPLE => "EMPTY_TUPLE",
        SETITEMS => "SETITEMS",
        BINFLOAT => "BINFLOAT",
        PROTO => "PROTO",
        NEWOBJ => "NEWOBJ",
        EXT1 => "EXT1",
        EXT2 => "EXT2",
        EXT4 => "EXT4",
        TUPLE1 => "TUPLE1",
        TUPLE2 => "TUPLE2",
        TUPLE3 => "TUPLE3",
        NEWTRUE => "NEWTRUE",
        NEWFALSE => "NEWFALSE",
        LONG1 => "LONG1",
        LONG4 => "LONG4",
        BINBYTES => "BINBYTES",
        SHORT_BINBYTES => "SHORT_BINBYTES",
        SHORT_BINUNICODE => "SHORT_BINUNICODE",
        BINUNICODE8 => "BINUNICODE8",
        BINBYTES8 => "BINBYTES8",
        EMPTY_SET => "EMPTY_SET",
        ADDITEMS => "ADDITEMS",
        FROZENSET => "FROZENSET",
        NEWOBJ_EX => "NEWOBJ_EX",
        STACK_GLOBAL => "STACK_GLOBAL",
        MEMOIZE => "MEMOIZE",
        FRAME => "FRAME",
        BYTEARRAY8 => "BYTEARRAY8",
        NEXT_BUFFER => "NEXT_BUFFER",
        READONLY_BUFFER => "READONLY_BUFFER",
        _ => return None,
    })
}
