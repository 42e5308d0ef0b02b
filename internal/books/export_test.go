package books_test

import platformv1 "github.com/proserun/prose/gen/prose/platform/v1"

type platformNP = platformv1.NounPhrase
