"""Writes the split strings that split_golden.json resolves with TFDS.

python3 split_cases.py | python3 split_oracle.py > split_golden.json
"""
import json
import random

DATASETS = {
    'two': [['train', [12, 12]], ['val', [3]]],
    'five': [['train', [5]]],
    'gaps': [['train', [3, 0, 4, 0, 0, 5, 2]], ['test', []], ['val', [0, 0]],
             ['train-v2', [1, 1, 1]], ['2023', [7]]],
    'big': [['train', [100] * 10 + [37]], ['validation', [33]]],
    'one': [['train', [1]]],
    'huge': [['train', [2**62, 2**62 - 1]], ['odd', [2**53 + 1]]],
}

HAND = [
    # Plain names, unions, whitespace.
    'train', 'val', 'train+val', 'val+train', 'train + val', 'train  +\tval',
    'train+train', ' train', 'train ', 'train\n', 'train\n\n', 'train\r',
    'train+', '+train', 'train++val', 'train + + val', '', ' ', '+',
    'Train', 'trian', 'train+tset', 'all', 'all+train', 'ALL', 'all[:10%]',
    'train-v2', '2023', 'test', 'train.v2', 'train[:10%]+all',
    # Absolute slices.
    'train[10:200]', 'train[10:20]', 'train[:10]', 'train[10:]', 'train[0:24]',
    'train[:24]', 'train[:25]', 'train[-24:]', 'train[-25:]', 'train[-10:]',
    'train[:-10]', 'train[-10:-5]', 'train[5:5]', 'train[7:3]', 'train[:0]',
    'train[:-0]', 'train[-0:]', 'train[0:0]', 'train[24:]', 'train[1_0:2_0]',
    'train[1__0:]', 'train[_1:]', 'train[1_:]', 'train[1.5:]', 'train[:]',
    'train[::]', 'train[1:2:3]', 'train[]', 'train[', 'train]', 'train[10]',
    'train[-1]', 'train[ 1:2]', 'train[1 :2]', 'train[a:b]', 'train[1:2]x',
    'train[١:٣]', 'train[１:３]', 'train[00010:00020]', 'train[--1:]',
    'train[9223372036854775807:]', 'train[:9223372036854775808]',
    'train[-9223372036854775808:]', 'train[:' + '9' * 40 + ']',
    # Percents: rounding is round-half-even on the double.
    'train[:10%]', 'train[:20%]', 'train[:30%]', 'train[:40%]', 'train[:50%]',
    'train[:60%]', 'train[:70%]', 'train[:90%]', 'train[90%:]', 'train[10%:]',
    'train[:1%]', 'train[:99%]', 'train[:100%]', 'train[-100%:]',
    'train[:101%]', 'train[-101%:]', 'train[:-10%]', 'train[-10%:]',
    'train[-30%:]', 'train[-50%:-10%]', 'train[:12.5%]', 'train[:33.333%]',
    'train[:.5%]', 'train[:5.%]', 'train[:.%]', 'train[:1..5%]',
    'train[:1_0%]', 'train[:1_0.5%]', 'train[:1._5%]', 'train[:0%]',
    'train[:-0%]', 'train[0%:]', 'train[50%:50%]', 'train[60%:40%]',
    'train[10%]', 'train[:%]', 'train[%:]', 'train[10%:20]', 'train[10:20%]',
    'train[:١٠%]', 'train[:' + '1' * 400 + '%]', 'train[:100.0000000001%]',
    'train[:99.99999999999999%]', 'train[:16.666666666666668%]',
    # Shards.
    'train[:4shard]', 'train[4shard]', 'train[0shard]', 'train[1shard]',
    'train[2shard]', 'train[3shard]', 'train[5shard]', 'train[6shard]',
    'train[7shard]', 'train[-1shard]', 'train[-2shard]', 'train[-7shard]',
    'train[-8shard]', 'train[1shard:]', 'train[:1shard]', 'train[1:3shard]',
    'train[1shard:3]', 'train[:0shard]', 'train[:-1shard]', 'train[:-6shard]',
    'train[:-10shard]', 'train[:-14shard]', 'train[-3shard:-1shard]',
    'train[100shard]', 'train[:100shard]', 'train[-100shard:]',
    'train[1.5shard]', 'train[shard]', 'train[1shard:2%]', 'train[1%:2shard]',
    'train[99999999999999999999shard]', 'train[-99999999999999999999shard]',
    'train[:99999999999999999999shard]', 'train[:-99999999999999999999shard]',
    'val[0shard]', 'val[:1shard]', 'test[:50%]', 'val[:50%]',
    # Unions of slices.
    'train[:50%]+val', 'train[:10]+train[-10:]', 'train[5:5]+val',
    'train[:0%]+val[:0%]', 'train[:-5%] + val[40%:60%]', 'val[:1%]',
    'validation[:1%]', 'validation[:2%]', 'validation[-1%:]',
    'odd[:50%]', 'odd[:1%]', 'odd[:100%]', 'odd[-1:]',
]

# Python's int() refuses more than 4300 digits; only tried on one dataset.
LONG = ['train[:' + '1' * 4301 + ']', 'train[:' + '0' * 4300 + '1]',
        'train[:' + '0' * 4299 + '1]']


def random_spec(rng, names):
  def number():
    k = rng.random()
    if k < 0.5:
      return str(rng.randint(-30, 130))
    if k < 0.7:
      return '%d.%d' % (rng.randint(-110, 110), rng.randint(0, 999))
    if k < 0.8:
      return rng.choice(['', '-', '0', '-0', '1_0', '_', '.', '1.', '.5'])
    return str(rng.randint(-1200, 1200))

  def bound():
    if rng.random() < 0.25:
      return ''
    return number() + rng.choice(['', '', '%', '%', 'shard'])

  def term():
    name = rng.choice(names + ['all', 'nope', 'Train'])
    k = rng.random()
    if k < 0.2:
      return name
    if k < 0.3:
      return '%s[%s]' % (name, bound())
    return '%s[%s:%s]' % (name, bound(), bound())

  sep = lambda: rng.choice(['+', '+', ' + ', '+ ', '\t+', '++'])
  spec = term()
  while rng.random() < 0.3:
    spec += sep() + term()
  return spec


def main():
  rng = random.Random(20240521)
  cases = []
  for ds in DATASETS:
    for spec in HAND:
      cases.append([ds, spec])
  for spec in LONG:
    cases.append(['two', spec])
  for _ in range(400):
    ds = rng.choice(sorted(DATASETS))
    names = [s[0] for s in DATASETS[ds]]
    cases.append([ds, random_spec(rng, names)])
  json.dump({'datasets': DATASETS, 'cases': cases}, __import__('sys').stdout)


if __name__ == '__main__':
  main()
