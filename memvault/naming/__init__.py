"""What names things in the wiki: article titles (`titles`), section headings (`headings`),
key-phrase similarity (`phrase_similarity`) and the writing system of a text (`scripts`)."""
