"""Resolves split strings with tensorflow_datasets itself, for the Go tests.

Usage: python3 split_oracle.py < cases.json > answers.json

cases.json: {"datasets": {NAME: [[SPLIT, [SHARD_LENGTHS...]], ...]},
             "cases": [[DATASET, SPEC], ...]}
answers.json: the same cases, each with either
  "ranges": [[SPLIT, FROM, TO], ...]  (empty ranges left out), and
  "files":  [[SPLIT, SHARD, SKIP, TAKE], ...] (TFDS's file instructions for
            those ranges), plus
  "inverted_but_read": [[SPLIT, FROM, TO], ...] for slices with FROM > TO
            that TFDS nevertheless reads (a negative take within one shard,
            which tf.data takes as "all"), or
  "error":  the message TFDS raised (while resolving, or "no data" when
            reading would fail: "corresponds to no data").
It resolves each case as tfds.load(split=SPEC) does: SplitDict[SPEC] (which,
for a SPEC that is exactly a split name, re-parses the name against that split
alone) and then the split's file_instructions.
"""
import json
import sys

from tensorflow_datasets.core import naming
from tensorflow_datasets.core import splits as splits_lib


def split_dict(splits):
  infos = []
  for name, lengths in splits:
    template = naming.ShardedFileTemplate(
        data_dir='/d', dataset_name='ds', split=name, filetype_suffix='tfrecord')
    infos.append(splits_lib.SplitInfo(
        name=name, shard_lengths=lengths, num_bytes=0,
        filename_template=template))
  return splits_lib.SplitDict(infos), infos


def resolve(splits, spec):
  sd, infos = split_dict(splits)
  if spec in sd.keys():
    scope = [sd[spec]]
  else:
    scope = infos
  by_name = {i.name: i for i in infos}
  try:
    absolute = splits_lib._make_absolute_instructions(scope, spec)
    all_files = sd[spec].file_instructions
  except RecursionError:
    return {'error': 'RecursionError'}
  except Exception as e:  # pylint: disable=broad-except
    return {'error': f'{type(e).__name__}: {e}'[:160]}
  ranges, files, quirks = [], [], []
  for a in absolute:
    info = by_name[a.splitname]
    n = info.num_examples
    frm = a.from_ or 0
    to = n if a.to is None else a.to
    instructions = splits_lib._file_instructions_for_split(a, info)
    if frm < to:
      ranges.append([a.splitname, frm, to])
      files.extend(file_list(a.splitname, instructions))
    elif instructions:
      # TFDS quirk: an inverted slice within one shard gets a negative take,
      # which tf.data's take() reads as "everything".
      quirks.append([a.splitname, frm, to])
  out = {'ranges': ranges, 'files': files}
  if quirks:
    out['inverted_but_read'] = quirks
  if not all_files:
    out['error'] = 'no data'
  return out


def file_list(split, instructions):
  out = []
  for f in instructions:
    # f.filename is /d/ds-SPLIT.tfrecord-XXXXX-of-YYYYY
    shard = int(f.filename.rsplit('-of-', 1)[0].rsplit('-', 1)[1])
    take = f.take if f.take != -1 else f.examples_in_shard - f.skip
    out.append([split, shard, f.skip, take])
  return out


def main():
  req = json.load(sys.stdin)
  out = []
  for ds, spec in req['cases']:
    r = resolve(req['datasets'][ds], spec)
    r['dataset'] = ds
    r['spec'] = spec
    out.append(r)
  # One case a line, so that diffs stay readable.
  w = sys.stdout.write
  w('{"datasets": %s,\n "cases": [\n' % json.dumps(req['datasets']))
  w(',\n'.join(json.dumps(c, ensure_ascii=False) for c in out))
  w('\n]}\n')


if __name__ == '__main__':
  sys.setrecursionlimit(200)
  main()
