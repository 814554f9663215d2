// Package augment draws image augmentation parameters: the class half of
// torchvision's v2 split, where package frames is the functional half. A
// Spec (what a config states, checked by Validate) and a key (seed, batch,
// sample, camera slot) give a Params, drawn by Draw from package keyed's
// hash, never from a worker's RNG, so batch N stays a pure function of
// (config, seed, N); Params.Augment is what frames applies on the frame's
// way into its slot (frames.Slot.Augment), fused into the resize. It
// imports keyed and frames and nothing else of oxefs.
//
// # Ops
//
// Geometry, applied first, fused into the one TensorFlow-exact resize:
//
//   - random_resized_crop (scale, ratio): a box of area fraction scale and
//     width/height ratio ratio (log-uniform), as fractions of the source's
//     sides (Octo's dlimp random_resized_crop; torchvision's pixel ratio on
//     a square source), at a uniform place;
//   - crop (area): a box of the source's aspect ratio, √area of each side,
//     at a uniform place;
//   - rotate (degrees) and translate (fractions of the width and height):
//     one affine, torchvision's F.affine(angle=−rotate, translate=[tx, ty])
//     with nearest sampling.
//
// A crop box is whole source pixels (frames.CropBox says how the fractions
// round) and is resized by the same kernel as an unaugmented frame, so a
// crop and its resize equal tf.image.resize(frame[y0:y1, x0:x1], size,
// "bilinear", antialias=False) bit for bit. The affine samples the resized
// frame at round(A⁻¹·p) for each output pixel p: for the augmentations'
// small rotations, from a ring of the 64 resized rows the current output
// rows sample (each resized once), else by computing the resize at that
// one point; never a second frame. Where A⁻¹·p leaves the frame the pixel
// is 0 (torchvision's fill; the corners of a rotation, the edge a
// translation uncovers). Interpolation is nearest, torchvision's default
// for rotate and affine and LeRobot's RandomAffine's.
//
// Colour, applied after the geometry in their order (see frames.ColourOp
// for each formula): brightness, contrast, saturation (factors, 1 changes
// nothing), hue (a fraction of a turn in [−0.5, 0.5]) and sharpness, each
// torchvision's F.adjust_* on uint8 tensors: brightness, contrast,
// saturation and sharpness through tables of torchvision's own float32
// arithmetic, hue in fixed point, which keeps each pixel's largest and
// smallest channel and can differ by one level only where the middle
// channel lands exactly on a whole number; equal to torchvision 0.14's on
// every value of the parity test, alone and chained (newer torchvision brings hue back to uint8 by 255.999 rather than 255,
// up to one level higher there). The resize of a crop is TensorFlow's, so
// it is within one level of torchvision's F.resized_crop (which rounds
// where TensorFlow truncates); the affine equals F.affine's nearest
// sampling of the resized frame bit for bit, fill included. Their order is
// brightness, contrast, saturation, hue, sharpness, or a random one per
// (sample, camera) with RandomOrder. Subset applies a random subset of the
// configured ops (a crop, the affine, each colour op) per (sample,
// camera), as LeRobot's RandomSubsetApply does.
//
// Dropout drops each present camera of a sample with probability p (its
// frames are zeros, nothing is decoded), except DropoutKeep, and keeps one
// chosen uniformly when it would drop them all. Ranges are written as
// torchvision writes them: a brightness, contrast or saturation of b is
// factors in Jitter(b) = [max(0, 1−b), 1+b], a hue of h is [−h, h].
//
// # Registered ops
//
// An op that is none of the fused stages above is one file, op_<name>.go,
// holding its Op (its config key, the domain of its range and the error
// text of what it may hold, how it draws its values from its own keyed
// Rand, its recorded columns with their meaning, and how it changes a
// frame), and one line of the table in ops.go. A config reads its key
// from the Op (config/augment.go has no case for it), Spec.Ops holds its
// range and Params.Op its values, both by the op's place in the table;
// Row records its columns after the fused stages' and info.json lists
// them; frames applies it (frames.FrameOp) to every frame of the camera
// after the colour ops, in the table's order. It draws from a key of its
// own name, so it moves no other parameter, and is not among what Subset
// chooses from; val frames do not get it.
//
// # Drawing
//
// Each camera slot of each sample draws from its own key, keyed.Hash(seed,
// "augment", batch, sample, slot), one stream per parameter; with Shared
// every camera of a sample draws from one key (dropout excepted). All the
// frames of a camera in a sample share its Params: no camera shake that is
// not in the data. Wrist cameras (Camera.Wrist) get colour only when
// WristColourOnly. Val frames get Eval's Params: no augmentation but the
// centre twin of the configured crop (EvalCrop).
//
// # Parameter columns
//
// Params.Row records a camera's Params as Width float32s, one row of a
// [B, Width] .npy per camera slot, and FromRow replays them exactly: the
// fused stages' NumColumns (Vector, FromVector), then the registered
// ops' columns. The fused stages' are crop_w, crop_h, crop_x, crop_y,
// rotate, translate_x, translate_y, brightness, contrast, saturation,
// hue, sharpness, order_brightness, order_contrast, order_saturation,
// order_hue, order_sharpness, drop (Columns and ColumnDoc give the names and their
// meaning). The identity row is 1 1 0.5 0.5 0 0 0 1 1 1 0 1 −1 −1 −1 −1 −1 0.
//
// # Presets
//
// Preset(name) gives each family's training augmentation as torchvision
// ranges; a config may start from one and change fields.
//
//	octo              random_resized_crop scale [0.8, 1], ratio [0.9, 1.1];
//	                  brightness 0.1, contrast [0.9, 1.1], saturation [0.9, 1.1],
//	                  hue 0.05; wrist cameras colour only; val uncropped
//	openvla           random_resized_crop scale 0.9, ratio 1 (a 90%-area crop at
//	                  a random place); brightness 0.2, contrast and saturation
//	                  [0.8, 1.2], hue 0.05; val centre-crops 0.9 of the area
//	openpi            non-wrist: crop 95% of each side, rotate ±5°; all: brightness
//	                  0.3, contrast 0.4, saturation 0.5; val uncropped
//	lerobot           brightness and contrast [0.8, 1.2], saturation [0.5, 1.5],
//	                  hue ±0.05, sharpness [0.5, 1.5], rotate ±5° with 5% translate;
//	                  3 of them per (sample, camera), colour in random order
//	gr00t             crop 95% of each side (centre at val); brightness 0.3,
//	                  contrast 0.4, saturation 0.5, hue 0.08, random order; the
//	                  224×224 resize is the slot's size
//	diffusion_policy  crop 90% of each side (76 of 84, 216×288 of 240×320),
//	                  centre crop at val
//
// Where the families' own code differs from these ops, the preset keeps
// the ranges and takes torchvision's op: Octo and OpenVLA's brightness is
// TensorFlow's additive delta and their contrast a per-channel mean
// (tf.image), here torchvision's factor and grayscale mean; openpi and
// GR00T size their crop int(0.95·side), here round(0.95·side) (213 rather
// than 212 of 224); their rotation (augmax) is bilinear, here nearest;
// LeRobot applies its affine at its place in the order (last by default),
// here always before the colour ops, so its fill is colour-adjusted too
// (brightness keeps it 0, contrast moves it to (1−f)·mean).
//
// # Errors
//
// Validate reports a field outside its domain as a *FieldError naming the
// field as a config spells it and what it may hold; ValidateSlots checks
// what needs the mix's camera slots (dropout_keep, dropout over one
// camera).
package augment
