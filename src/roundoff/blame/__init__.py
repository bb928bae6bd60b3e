"""roundoff.blame"""
