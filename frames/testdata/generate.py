"""Regenerates frames/testdata: small JPEG and PNG images in the colour
layouts the fixtures lack, and TensorFlow's decode of each.

    python3 frames/testdata/generate.py     # from the repository root

Needs tensorflow-cpu (2.21 was used) and libturbojpeg.so.0 (libjpeg-turbo
2.1.5, Debian 12) to encode the JPEGs with chroma subsampling TensorFlow's
encoder does not offer. The tests only read the files.

Each image is 37x29 (odd on purpose: chroma planes with a half-filled last
column and row) of smooth gradients plus noise, except *blocks: 48x32 of
flat 16x16 squares, whose 8x8 blocks every IDCT decodes alike, so that
image/jpeg's chroma upsampling can be checked exactly. Files:
  <name>.jpg / <name>.png   the encoded image
  <name>.npy                tf.io.decode_image(bytes, channels=3), uint8 HxWx3
"""
import ctypes
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = 37, 29


def content(channels=3, dtype=np.uint8, seed=0):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)
    base = np.stack([
        128 + 100 * np.sin(x / 5.0) * np.cos(y / 7.0),
        128 + 90 * np.cos((x + y) / 6.0),
        128 + 80 * np.sin(x * y / 60.0),
        255 * (x / (W - 1)),
    ], axis=-1)[..., :channels]
    img = np.clip(base + rng.normal(0, 12, base.shape), 0, 255)
    if dtype == np.uint16:
        return (img * 257).astype(np.uint16)
    return img.astype(np.uint8)


def blocks(seed=3):
    """48x32 of 16x16 squares of one colour each: every 8x8 block of every
    component is flat (DCT coefficient DC only), so any IDCT gives the same
    samples and only chroma upsampling and colour conversion can differ."""
    rng = np.random.default_rng(seed)
    colours = rng.integers(0, 256, (2, 3, 3), dtype=np.uint8)
    return np.repeat(np.repeat(colours, 16, axis=0), 16, axis=1)


def turbo_jpeg(rgb, subsamp, quality=90):
    tj = ctypes.CDLL("libturbojpeg.so.0")
    tj.tjInitCompress.restype = ctypes.c_void_p
    h = tj.tjInitCompress()
    buf = ctypes.POINTER(ctypes.c_ubyte)()
    size = ctypes.c_ulong(0)
    src = np.ascontiguousarray(rgb)
    # tjCompress2(handle, src, width, pitch, height, TJPF_RGB=0, &buf, &size, subsamp, quality, flags)
    height, width = src.shape[:2]
    rc = tj.tjCompress2(ctypes.c_void_p(h), src.ctypes.data_as(ctypes.c_void_p), width, width * 3, height, 0,
                        ctypes.byref(buf), ctypes.byref(size), subsamp, quality, 0)
    assert rc == 0, "tjCompress2 failed"
    out = ctypes.string_at(buf, size.value)
    tj.tjFree(buf)
    tj.tjDestroy(ctypes.c_void_p(h))
    return out


def save(name, ext, data):
    with open(os.path.join(HERE, name + "." + ext), "wb") as f:
        f.write(data)
    decoded = tf.io.decode_image(data, channels=3).numpy()
    np.save(os.path.join(HERE, name + ".npy"), decoded)


rgb = content()
# TJSAMP: 444 = 0, 422 = 1, 420 = 2, GRAY = 3, 440 = 4
save("jpeg444", "jpg", turbo_jpeg(rgb, 0))
save("jpeg422", "jpg", turbo_jpeg(rgb, 1))
save("jpeg420", "jpg", turbo_jpeg(rgb, 2))
save("jpeg440", "jpg", turbo_jpeg(rgb, 4))
save("jpeggray", "jpg", turbo_jpeg(rgb, 3))
save("jpeg420blocks", "jpg", turbo_jpeg(blocks(), 2, 100))
save("jpeg422blocks", "jpg", turbo_jpeg(blocks(), 1, 100))
save("jpeg440blocks", "jpg", turbo_jpeg(blocks(), 4, 100))
save("pnggray", "png", tf.io.encode_png(content(1)).numpy())
save("pnggray16", "png", tf.io.encode_png(content(1, np.uint16)).numpy())
save("pngrgba", "png", tf.io.encode_png(content(4, seed=1)).numpy())
save("pngrgb16", "png", tf.io.encode_png(content(3, np.uint16, seed=2)).numpy())
